#include "propose/proposer.h"

#include "propose/params_proposer.h"
#include "propose/replay_proposer.h"

namespace kpilot {

Result<std::unique_ptr<Proposer>> MakeProposer(const std::string& spec, const Task& task) {
  if (spec == "params") {
    if (task.params.empty()) {
      return Status::InvalidInput("proposer \"params\": task " + task.name +
                                  " has no tunable params — declare [params] in task.toml "
                                  "(e.g. BLOCK = [128, 256, 512]) or use replay:DIR");
    }
    return MakeParamsProposer(task);
  }
  if (spec.rfind("replay:", 0) == 0) return MakeReplayProposer(spec, task);
  return Status::InvalidInput("unknown proposer \"" + spec + "\" — choose params or replay:DIR");
}

}  // namespace kpilot
