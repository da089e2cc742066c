#include "model/tensor_source.h"

#include "util/error.h"

namespace ember {

int64_t SourceTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

void TensorSource::add(SourceTensor t) {
  if (index_.count(t.name)) throw Error("tensor '" + t.name + "' appears twice");
  index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
}

const SourceTensor* TensorSource::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint8_t* TensorSource::make_owned(size_t nbytes) {
  owned_.push_back(std::make_unique<uint8_t[]>(nbytes));
  return owned_.back().get();
}

}  // namespace ember
