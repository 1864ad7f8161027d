// The JSON writer colltopo --json is built on: escaping, and the shape of what it writes.
#include <gtest/gtest.h>

#include "topo/json_writer.h"

namespace coll {
namespace topo {
namespace {

TEST(JsonQuote, PlainTextIsOnlyQuoted) { EXPECT_EQ(jsonQuote("eth0"), "\"eth0\""); }

TEST(JsonQuote, QuotesAndBackslashesAreEscaped) {
  EXPECT_EQ(jsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonQuote("/"), "\"/\"");  // allowed unescaped
}

TEST(JsonQuote, ControlCharactersAreEscaped) {
  EXPECT_EQ(jsonQuote("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(jsonQuote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(jsonQuote("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
}

TEST(JsonQuote, ValidUtf8PassesThrough) {
  EXPECT_EQ(jsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");            // 2 bytes
  EXPECT_EQ(jsonQuote("\xe2\x82\xac"), "\"\xe2\x82\xac\"");          // 3 bytes
  EXPECT_EQ(jsonQuote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");  // 4 bytes
  EXPECT_EQ(jsonQuote("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF
}

TEST(JsonQuote, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(jsonQuote("a\xff"
                      "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(jsonQuote("\xc3"), "\"\\ufffd\"");                                   // truncated
  EXPECT_EQ(jsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                        // overlong '/'
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");             // a UTF-16 surrogate
  EXPECT_EQ(jsonQuote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
  EXPECT_EQ(jsonQuote("\x80x"), "\"\\ufffdx\"");                                 // a stray continuation byte
}

TEST(JsonWriter, NestedBlocksAreIndented) {
  JsonWriter json;
  json.beginObject().field("name", "eth0").field("up", true).key("numa_node").null();
  json.key("list").beginArray().value(1).value(-2).endArray();
  json.endObject();
  EXPECT_EQ(json.str(),
            "{\n"
            "  \"name\": \"eth0\",\n"
            "  \"up\": true,\n"
            "  \"numa_node\": null,\n"
            "  \"list\": [\n"
            "    1,\n"
            "    -2\n"
            "  ]\n"
            "}\n");
}

TEST(JsonWriter, InlineContainersStayOnOneLine) {
  JsonWriter json;
  json.beginObject(JsonWriter::Layout::kInline).field("a", 1u);
  json.key("cpus").beginArray().value(0).value(1).endArray();  // inline because its parent is
  json.endObject();
  EXPECT_EQ(json.str(), "{\"a\": 1, \"cpus\": [0, 1]}\n");
}

TEST(JsonWriter, EmptyContainers) {
  JsonWriter json;
  json.beginObject().key("none").beginArray().endArray().key("empty").beginObject().endObject().endObject();
  EXPECT_EQ(json.str(), "{\n  \"none\": [],\n  \"empty\": {}\n}\n");
}

TEST(JsonWriter, KeysAndStringValuesAreEscaped) {
  JsonWriter json;
  json.beginObject(JsonWriter::Layout::kInline).field("we\"ird", std::string("x\ny")).endObject();
  EXPECT_EQ(json.str(), "{\"we\\\"ird\": \"x\\ny\"}\n");
}

TEST(JsonWriter, NullCStringIsNull) {
  JsonWriter json;
  json.beginArray(JsonWriter::Layout::kInline).value(static_cast<const char*>(nullptr)).endArray();
  EXPECT_EQ(json.str(), "[null]\n");
}

}  // namespace
}  // namespace topo
}  // namespace coll
