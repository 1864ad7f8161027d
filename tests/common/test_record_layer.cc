// The record layer of COLL_NET_ENCRYPT (common/record_layer.h) and what it is built from:
// HKDF-SHA256 and AES-256-GCM against published vectors, then records that must open in order
// and only in order, keys that belong to one connection and one direction, and a counter that
// refuses to wrap.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/hmac.h"
#include "common/record_layer.h"

namespace coll {
namespace {

std::string hex(const uint8_t* data, size_t size) {
  std::string text;
  char byte[3];
  for (size_t i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", data[i]);
    text += byte;
  }
  return text;
}

// RFC 5869, appendix A.1.
TEST(RecordLayer, HkdfMatchesRfc5869Case1) {
  const std::vector<uint8_t> ikm(22, 0x0b);
  std::vector<uint8_t> salt, info;
  for (uint8_t i = 0x00; i <= 0x0c; ++i) salt.push_back(i);
  for (uint8_t i = 0xf0; i <= 0xf9; ++i) info.push_back(i);
  const std::vector<uint8_t> okm =
      hkdfSha256({salt.data(), salt.size()}, {ikm.data(), ikm.size()}, {info.data(), info.size()}, 42);
  EXPECT_EQ(hex(okm.data(), okm.size()),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
}

// The GCM specification's test cases 13 and 14 (AES-256, all-zero key and nonce).
TEST(RecordLayer, AesGcmMatchesThePublishedVectors) {
  const uint8_t key[Aes256Gcm::kKeyBytes] = {};
  const uint8_t nonce[Aes256Gcm::kNonceBytes] = {};
  uint8_t tag[Aes256Gcm::kTagBytes];
  Aes256Gcm seal(Aes256Gcm::Use::kSeal, key);
  seal.seal(nonce, {nullptr, 0}, nullptr, 0, nullptr, tag);
  EXPECT_EQ(hex(tag, sizeof(tag)), "530f8afbc74536b9a963b4f1c4cb738b");
  uint8_t block[16] = {};
  const ByteView plain{block, sizeof(block)};
  seal.seal(nonce, {nullptr, 0}, &plain, 1, block, tag);
  EXPECT_EQ(hex(block, sizeof(block)), "cea7403d4d606b6e074ec5d3baf39d18");
  EXPECT_EQ(hex(tag, sizeof(tag)), "d0d1c8a799996bf0265b98b5d48ab919");
  Aes256Gcm open(Aes256Gcm::Use::kOpen, key);
  EXPECT_TRUE(open.open(nonce, {nullptr, 0}, block, sizeof(block), tag));
  EXPECT_EQ(hex(block, sizeof(block)), std::string(32, '0'));
}

struct Pair {
  RecordCiphers opener;
  RecordCiphers accepter;
};

Pair connection(uint8_t nonceByte = 1) {
  const std::array<uint8_t, 32> secret{9, 8, 7};
  uint8_t openerNonce[32] = {nonceByte}, accepterNonce[32] = {2};
  const RecordKeys keys = deriveRecordKeys(secret, "test", openerNonce, accepterNonce);
  return {makeRecordCiphers(keys, RecordSide::kOpener), makeRecordCiphers(keys, RecordSide::kAccepter)};
}

struct Record {
  std::string header;
  std::vector<uint8_t> data;
  uint8_t tag[kRecordTagBytes];
};

Record seal(RecordCipher& cipher, const std::string& header, const std::string& text) {
  Record record;
  record.header = header;
  record.data.resize(text.size());
  const ByteView piece{text.data(), text.size()};
  cipher.seal({record.header.data(), record.header.size()}, &piece, 1, record.data.data(), record.tag);
  return record;
}

bool open(RecordCipher& cipher, Record record, std::string* text = nullptr) {
  const bool ok =
      cipher.open({record.header.data(), record.header.size()}, record.data.data(), record.data.size(), record.tag);
  if (ok && text != nullptr) text->assign(record.data.begin(), record.data.end());
  return ok;
}

TEST(RecordLayer, RecordsOpenInOrderInBothDirections) {
  Pair pair = connection();
  std::string text;
  const Record first = seal(*pair.opener.seal, "h1", "the first record");
  EXPECT_EQ(std::string(first.data.begin(), first.data.end()).find("first"), std::string::npos);
  ASSERT_TRUE(open(*pair.accepter.open, first, &text));
  EXPECT_EQ(text, "the first record");
  ASSERT_TRUE(open(*pair.accepter.open, seal(*pair.opener.seal, "h2", "the second"), &text));
  EXPECT_EQ(text, "the second");
  ASSERT_TRUE(open(*pair.opener.open, seal(*pair.accepter.seal, "back", "an answer"), &text));
  EXPECT_EQ(text, "an answer");
}

TEST(RecordLayer, ATamperedByteOrHeaderIsRefused) {
  Pair pair = connection();
  Record record = seal(*pair.opener.seal, "header", "payload bytes");
  Record payload = record, header = record, tag = record;
  payload.data[3] ^= 0x01;
  header.header[0] ^= 0x01;
  tag.tag[15] ^= 0x80;
  EXPECT_FALSE(open(*pair.accepter.open, payload));
  Pair again = connection();
  seal(*again.opener.seal, "header", "payload bytes");
  EXPECT_FALSE(open(*again.accepter.open, header));
  Pair third = connection();
  EXPECT_FALSE(open(*third.accepter.open, tag));
}

TEST(RecordLayer, ReplayedAndReorderedRecordsAreRefused) {
  Pair pair = connection();
  const Record first = seal(*pair.opener.seal, "h", "one");
  const Record second = seal(*pair.opener.seal, "h", "two");
  EXPECT_FALSE(open(*pair.accepter.open, second)) << "the second record opened first";
  Pair replay = connection();
  const Record once = seal(*replay.opener.seal, "h", "one");
  ASSERT_TRUE(open(*replay.accepter.open, once));
  EXPECT_FALSE(open(*replay.accepter.open, once)) << "a record opened twice";
  (void)first;
}

TEST(RecordLayer, KeysBelongToOneConnectionAndOneDirection) {
  Pair pair = connection(1), other = connection(3);
  const Record record = seal(*pair.opener.seal, "h", "text");
  EXPECT_FALSE(open(*other.accepter.open, record)) << "another connection's keys opened it";
  EXPECT_FALSE(open(*pair.opener.open, record)) << "the sender's own receiving key opened it (reflected)";
}

TEST(RecordLayer, TheCounterIsNeverReused) {
  const std::array<uint8_t, 32> secret{1};
  const uint8_t nonce[32] = {};
  const RecordKeys keys = deriveRecordKeys(secret, "test", nonce, nonce);
  const uint64_t last = std::numeric_limits<uint64_t>::max() - 1;
  RecordCipher sealer(Aes256Gcm::Use::kSeal, keys.opener, last);
  RecordCipher opener(Aes256Gcm::Use::kOpen, keys.opener, last);
  ASSERT_TRUE(open(opener, seal(sealer, "h", "the last record")));
  EXPECT_THROW(seal(sealer, "h", "one too many"), CollError);
}

TEST(RecordLayer, TheSettingParsesAndNeedsASecret) {
  unsetenv("COLL_NET_ENCRYPT");
  EXPECT_FALSE(encryptionRequested());
  setenv("COLL_NET_ENCRYPT", "1", 1);
  EXPECT_TRUE(encryptionRequested());
  setenv("COLL_NET_ENCRYPT", "off", 1);
  EXPECT_FALSE(encryptionRequested());
  setenv("COLL_NET_ENCRYPT", "2", 1);
  EXPECT_THROW(encryptionRequested(), CollError);
  unsetenv("COLL_NET_ENCRYPT");
  try {
    requireSecretForEncryption(std::array<uint8_t, 32>{}, "the test's connection");
    FAIL() << "an all-zero secret was accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("COLL_STORE_SECRET"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("COLL_NET_ENCRYPT"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(requireSecretForEncryption(std::array<uint8_t, 32>{1}, "the test's connection"));
}

}  // namespace
}  // namespace coll
