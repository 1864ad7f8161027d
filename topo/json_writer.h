// A small JSON writer, so that colltopo (and later the communicator view) can print machine-
// readable output without a new dependency. It only writes well-formed documents: strings are
// escaped (control characters, quotes, backslashes) and bytes that are not valid UTF-8, which
// interface names and sysfs strings may contain, become U+FFFD instead of breaking the parser.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

namespace coll {
namespace topo {

// `text` as a JSON string literal, quotes included.
std::string jsonQuote(const std::string& text);

class JsonWriter {
 public:
  // kBlock puts each member on its own indented line; kInline keeps the container on one line
  // (short lists such as CPU numbers read better that way).
  enum class Layout { kBlock, kInline };

  JsonWriter& beginObject(Layout layout = Layout::kBlock);
  JsonWriter& endObject();
  JsonWriter& beginArray(Layout layout = Layout::kBlock);
  JsonWriter& endArray();
  // The name of the next member; only inside an object.
  JsonWriter& key(const std::string& name);

  JsonWriter& value(const std::string& text);
  JsonWriter& value(const char* text);  // nullptr writes null
  JsonWriter& value(bool flag);
  template <typename Integer, std::enable_if_t<std::is_integral<Integer>::value, int> = 0>
  JsonWriter& value(Integer number) {
    return raw(std::to_string(number));
  }
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(const std::string& name, const T& item) {
    return key(name).value(item);
  }

  // The document, with a final newline. Only meaningful once every container is closed.
  std::string str() const { return out_ + "\n"; }

 private:
  struct Level {
    Layout layout;
    bool empty;
  };

  JsonWriter& raw(const std::string& token);
  JsonWriter& open(char bracket, Layout layout);
  JsonWriter& close(char bracket);
  void separate();  // the comma and line break (or space) before a member
  bool insideInline() const;

  std::vector<Level> levels_;
  bool afterKey_ = false;
  std::string out_;
};

}  // namespace topo
}  // namespace coll
