// The index writer's string and name tables and varint encoders.
#include "symbols/index/internal/index_tables.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace hangwatch::symbols::internal {

namespace {

template <typename F>
void ForEachToken(std::string_view name, F&& f) {
  size_t begin = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '>' || c == '(' || c == ')' || c == ',') {
      f(name.substr(begin, i + 1 - begin));
      begin = i + 1;
    }
  }
  if (begin < name.size()) f(name.substr(begin));
}

}  // namespace

void PutUleb(std::string* out, uint64_t v) {
  if (v < 0x80) {
    out->push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  size_t n = 0;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    buf[n++] = static_cast<char>(b);
  } while (v != 0);
  out->append(buf, n);
}

void PutSleb(std::string* out, int64_t v) {
  if (v >= -64 && v < 64) {
    out->push_back(static_cast<char>(v & 0x7f));
    return;
  }
  char buf[10];
  size_t n = 0;
  bool more = true;
  while (more) {
    uint8_t b = v & 0x7f;
    v >>= 7;  // arithmetic shift
    if ((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0)) {
      more = false;
    } else {
      b |= 0x80;
    }
    buf[n++] = static_cast<char>(b);
  }
  out->append(buf, n);
}

uint32_t StringTable::Add(std::string_view s) {
  auto it = offsets_.find(s);
  if (it != offsets_.end()) return *it;
  // Each string is preceded by its 32-bit length, so that readers need no strlen.
  const auto length = static_cast<uint32_t>(s.size());
  bytes_.append(reinterpret_cast<const char*>(&length), sizeof(length));
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(s);
  bytes_.push_back('\0');
  offsets_.insert(offset);
  return offset;
}

uint32_t NameTable::Add(std::string_view name) {
  auto it = ids_.find(absl::string_view(name.data(), name.size()));
  if (it == ids_.end()) {
    it = ids_.emplace(std::string(name), static_cast<uint32_t>(names_.size())).first;
    names_.push_back(&it->first);
    uses_.push_back(0);
  }
  return it->second;
}

void NameTable::Finish(StringTable* strings, std::vector<uint32_t>* tokens,
                       std::vector<uint32_t>* names, std::string* data,
                       std::vector<uint32_t>* order) const {
  std::vector<uint32_t> by_use(names_.size());
  for (uint32_t i = 0; i < by_use.size(); ++i) by_use[i] = i;
  std::stable_sort(by_use.begin(), by_use.end(),
                   [&](uint32_t a, uint32_t b) { return uses_[a] > uses_[b]; });
  order->assign(names_.size(), 0);
  for (uint32_t i = 0; i < by_use.size(); ++i) (*order)[by_use[i]] = i;
  // One tokenizing pass: provisional token ids in order of appearance, with counts.
  absl::flat_hash_map<std::string_view, uint32_t> provisional;
  std::vector<std::string_view> text;
  std::vector<uint32_t> count, sequence, begin;
  for (uint32_t i : by_use) {
    begin.push_back(static_cast<uint32_t>(sequence.size()));
    ForEachToken(*names_[i], [&](std::string_view t) {
      auto [it, inserted] = provisional.try_emplace(t, static_cast<uint32_t>(text.size()));
      if (inserted) {
        text.push_back(t);
        count.push_back(0);
      }
      ++count[it->second];
      sequence.push_back(it->second);
    });
  }
  begin.push_back(static_cast<uint32_t>(sequence.size()));
  std::vector<uint32_t> by_count(text.size());
  for (uint32_t i = 0; i < by_count.size(); ++i) by_count[i] = i;
  std::sort(by_count.begin(), by_count.end(), [&](uint32_t a, uint32_t b) {
    return count[a] != count[b] ? count[a] > count[b] : text[a] < text[b];
  });
  std::vector<uint32_t> id(text.size());
  for (uint32_t i = 0; i < by_count.size(); ++i) {
    id[by_count[i]] = i;
    tokens->push_back(strings->Add(text[by_count[i]]));
  }
  for (size_t n = 0; n + 1 < begin.size(); ++n) {
    names->push_back(static_cast<uint32_t>(data->size()));
    for (uint32_t k = begin[n]; k < begin[n + 1]; ++k) PutUleb(data, id[sequence[k]]);
  }
}

}  // namespace hangwatch::symbols::internal
