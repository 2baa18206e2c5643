// BatchSymbolizer: one lookup per distinct (module, address), one batch per module.
#include "symbols/batch_symbolizer.h"

#include <algorithm>
#include <utility>

namespace hangwatch::symbols {

BatchSymbolizer::BatchSymbolizer(BatchSymbolizerOptions options) : options_(std::move(options)) {}

BatchSymbolizer::~BatchSymbolizer() = default;

size_t BatchSymbolizer::AddModule(std::string build_id, std::string path) {
  Batch& b = batches_.emplace_back();
  b.build_id = std::move(build_id);
  b.path = std::move(path);
  return batches_.size() - 1;
}

void BatchSymbolizer::AddFrame(size_t module, uint64_t offset, size_t index_in_stack) {
  batches_[module].addresses.push_back(LookupOffset(offset, index_in_stack));
}

void BatchSymbolizer::Run(const Progress& progress, const Failure& failure) {
  symbolizer_ = std::make_unique<OfflineSymbolizer>(options_.symbolizer);
  size_t total = 0;
  for (Batch& b : batches_) {
    std::sort(b.addresses.begin(), b.addresses.end());
    b.addresses.erase(std::unique(b.addresses.begin(), b.addresses.end()), b.addresses.end());
    if (!b.addresses.empty()) ++total;
  }
  size_t done = 0;
  for (size_t m = 0; m < batches_.size(); ++m) {
    Batch& b = batches_[m];
    if (b.addresses.empty()) continue;
    ++done;
    if (progress) progress(done, total, m);
    if (b.path.empty()) continue;
    const absl::Status status =
        options_.by_build_id && !b.build_id.empty()
            ? symbolizer_->SymbolizeBuildId(b.build_id, b.path, b.addresses, &b.answers)
            : symbolizer_->SymbolizeFile(b.path, b.addresses, &b.answers);
    if (!status.ok()) {
      b.answers.clear();
      if (failure) failure(m, status);
    }
  }
}

const SymbolizedAddress* BatchSymbolizer::Answer(size_t module, uint64_t offset,
                                                 size_t index_in_stack) const {
  const Batch& b = batches_[module];
  const uint64_t addr = LookupOffset(offset, index_in_stack);
  auto it = std::lower_bound(b.addresses.begin(), b.addresses.end(), addr);
  if (it == b.addresses.end() || *it != addr) return nullptr;
  const size_t i = static_cast<size_t>(it - b.addresses.begin());
  return i < b.answers.size() ? &b.answers[i] : nullptr;
}

const std::vector<std::string>& BatchSymbolizer::warnings() const {
  static const std::vector<std::string> kNone;
  return symbolizer_ != nullptr ? symbolizer_->warnings() : kNone;
}

}  // namespace hangwatch::symbols
