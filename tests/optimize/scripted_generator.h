// A generator for the optimize loop's tests: one draft per expansion, the parent's source with
// param V set to the next of `values`, then nothing.
#pragma once

#include <future>
#include <string>
#include <vector>

#include "generate/generator.h"

namespace kpilot::testing {

class ScriptedGenerator : public Generator {
 public:
  explicit ScriptedGenerator(std::vector<std::string> values) : values_(std::move(values)) {}
  std::string name() const override { return "scripted"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    std::vector<Draft> out;
    if (next_ < values_.size()) {
      Draft d;
      d.source = ctx.parent_source;
      d.source_name = ctx.parent_source_name;
      d.params = {{"V", values_[next_++]}};
      d.summary = "V=" + d.params["V"];
      out.push_back(d);
    }
    std::promise<Result<std::vector<Draft>>> p;
    p.set_value(std::move(out));
    return p.get_future();
  }

 private:
  std::vector<std::string> values_;
  size_t next_ = 0;
};

}  // namespace kpilot::testing
