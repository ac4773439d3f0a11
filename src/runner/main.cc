// kpilot-runner: evaluates one candidate against a task's reference in isolation.
//
//   kpilot-runner --request REQUEST.json     prints one JSON result on stdout
//   kpilot-runner --version
//
// Spawned by the harness (harness/), once per evaluation, in a fresh working directory.
#include <cstring>
#include <iostream>

#include "core/fs.h"
#include "runner/kernel_object.h"
#include "runner/protocol.h"
#include "runner/supervisor.h"
#include "runner/worker.h"

int main(int argc, char** argv) {
  using namespace kpilot;
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::cout << "kpilot-runner protocol " << kRunnerProtocolVersion << " abi " << KPILOT_ABI_VERSION << "\n";
    return 0;
  }
  if (argc != 3 || std::strcmp(argv[1], "--request") != 0) {
    std::cerr << "usage: kpilot-runner --request REQUEST.json\n";
    return 2;
  }
  auto text = ReadFile(argv[2]);
  if (!text.ok()) {
    std::cerr << "kpilot-runner: " << text.status().message() << "\n";
    return 2;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::cerr << "kpilot-runner: " << argv[2] << ": not valid JSON\n";
    return 2;
  }
  auto request = RunRequestFromJson(j);
  if (!request.ok()) {
    std::cerr << "kpilot-runner: " << request.status().message() << "\n";
    return 2;
  }
  return RunSupervised(*request, request->backend == Backend::kCuda ? WorkerFn(RunCudaWorker) : WorkerFn(RunHostWorker));
}
