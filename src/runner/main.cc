// kpilot-runner: evaluates one candidate against a task's reference in isolation.
//
//   kpilot-runner --request REQUEST.json     prints one JSON result on stdout
//   kpilot-runner --serve                    a request file's path per line on stdin, a result
//                                            line per request on stdout (see supervisor.h)
//   kpilot-runner --sandbox SPEC.json -- PROGRAM ARGS...
//                                            runs PROGRAM confined (sandbox/sandbox.h: RunConfined)
//   kpilot-runner --version
//
// Spawned by the harness (harness/), once per evaluation in a fresh working directory, or once
// for many evaluations (--serve), each request in a fresh directory of its own.
#include <cstring>
#include <iostream>

#include "runner/kernel_object.h"
#include "runner/protocol.h"
#include "runner/supervisor.h"
#include "runner/worker.h"
#include "core/fs.h"
#include "sandbox/sandbox.h"

int main(int argc, char** argv) {
  using namespace kpilot;
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::cout << "kpilot-runner protocol " << kRunnerProtocolVersion << " abi " << KPILOT_ABI_VERSION << "\n";
    return 0;
  }
  if (argc >= 4 && std::strcmp(argv[1], "--sandbox") == 0 && std::strcmp(argv[3], "--") == 0) {
    auto text = ReadFile(argv[2]);
    auto spec = text.ok() ? SandboxSpecFromJson(nlohmann::json::parse(*text, nullptr, false))
                          : Result<SandboxSpec>(text.status());
    if (!spec.ok()) {
      std::cerr << "kpilot-runner: " << argv[2] << ": " << spec.status().message() << "\n";
      return 2;
    }
    return RunConfined(*spec, std::vector<std::string>(argv + 4, argv + argc));
  }
  if (argc == 2 && std::strcmp(argv[1], "--serve") == 0)
    return RunServing([](Backend b) { return b == Backend::kCuda ? MakeCudaSession() : MakeHostSession(); });
  if (argc != 3 || std::strcmp(argv[1], "--request") != 0) {
    std::cerr << "usage: kpilot-runner --request REQUEST.json | --serve | --sandbox SPEC.json -- PROGRAM ARGS... | "
                 "--version\n";
    return 2;
  }
  auto request = ReadRunRequestFile(argv[2]);
  if (!request.ok()) {
    std::cerr << "kpilot-runner: " << request.status().message() << "\n";
    return 2;
  }
  return RunSupervised(*request,
                       request->backend == Backend::kCuda ? WorkerFn(RunCudaWorker) : WorkerFn(RunHostWorker));
}
