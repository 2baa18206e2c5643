// The deduplicating tables and varint encoders the index writer builds its sections with.
#ifndef HANGWATCH_SYMBOLS_INDEX_INTERNAL_INDEX_TABLES_H_
#define HANGWATCH_SYMBOLS_INDEX_INTERNAL_INDEX_TABLES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/hash/hash.h"

namespace hangwatch::symbols::internal {

// Varints are encoded into a small buffer and appended at once (a push_back per byte was 4 % of
// an index build).
void PutUleb(std::string* out, uint64_t v);
void PutSleb(std::string* out, int64_t v);

// Deduplicated NUL-terminated strings; the set holds offsets into bytes_ and is searched by
// content (no per-string allocation).
class StringTable {
 public:
  StringTable() : offsets_(0, Hash{&bytes_}, Eq{&bytes_}) { Add(""); }
  uint32_t Add(std::string_view s);
  const std::string& bytes() const { return bytes_; }

 private:
  struct Hash {
    using is_transparent = void;
    const std::string* bytes;
    size_t operator()(std::string_view s) const { return absl::HashOf(s); }
    size_t operator()(uint32_t off) const { return absl::HashOf(View(*bytes, off)); }
  };
  struct Eq {
    using is_transparent = void;
    const std::string* bytes;
    static std::string_view Of(const std::string&, std::string_view s) { return s; }
    static std::string_view Of(const std::string& b, uint32_t off) { return View(b, off); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Of(*bytes, a) == Of(*bytes, b);
    }
  };
  static std::string_view View(const std::string& b, uint32_t off) {
    return std::string_view(b.data() + off);
  }

  std::string bytes_;
  absl::flat_hash_set<uint32_t, Hash, Eq> offsets_;
};

// Function names, deduplicated, stored as runs of tokens (symbol_index_format.h): the name cut
// after every '<', '>', '(', ')' and ','. Token ids are given by frequency, so that the most
// common pieces take one byte.
class NameTable {
 public:
  uint32_t Add(std::string_view name);
  size_t size() const { return names_.size(); }
  // Counts one reference to a name: the most used names get the smallest (shortest) indexes.
  uint32_t Use(uint32_t id) {
    ++uses_[id];
    return id;
  }

  // Fills the token, name and name-data tables (token strings go into `strings`); `order`
  // maps the ids given by Add to the final name indexes.
  void Finish(StringTable* strings, std::vector<uint32_t>* tokens, std::vector<uint32_t>* names,
              std::string* data, std::vector<uint32_t>* order) const;

 private:
  // Node-based: names_ points at the keys.
  absl::node_hash_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> names_;
  std::vector<uint32_t> uses_;
};

}  // namespace hangwatch::symbols::internal

#endif  // HANGWATCH_SYMBOLS_INDEX_INTERNAL_INDEX_TABLES_H_
