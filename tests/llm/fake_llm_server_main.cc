// fake_llm_server: FakeLlmServer as a program, serving kernels from files — for runs of
// `kpilot optimize --generator llm:…` outside a test binary (the GPU check in docs/results.md,
// "LLM and command generators through a scripted endpoint": the loop evaluating, profiling and
// promoting kernels a person wrote, with no live model).
//
//   fake_llm_server [--port-file FILE] [--once] KERNEL_FILE...
//   fake_llm_server [--port-file FILE] [--once] --script SCRIPT.json
//
// Serves both wire formats on 127.0.0.1, an OS-chosen port. Each request gets the next file's
// text in one fenced code block (```cuda for .cu, ```cpp otherwise); after the last file it
// starts again from the first, or with --once answers 500 "script exhausted". Prints the base URL
// (http://127.0.0.1:PORT/v1) on the first line of stdout, writes it to FILE too, and serves until
// SIGINT or SIGTERM; then prints how many requests it answered. With --script the replies come
// from a JSON script instead (LoadFakeScript in fake_llm_server.h: text, files, fenced code,
// errors), in order — e.g. the scripted simplifications, citations and rebuilds of a
// `kpilot lineage` run (bench/lineage/).
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "fake_llm_server.h"

namespace {

using kpilot::llm::testing::FakeLlmServer;
using kpilot::llm::testing::FakeReply;
using kpilot::llm::testing::RecordedRequest;

int Usage() {
  std::cerr << "usage: fake_llm_server [--port-file FILE] [--once] (KERNEL_FILE... | --script SCRIPT.json)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string port_file;
  bool once = false;
  std::string script;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--script" && i + 1 < argc) {
      script = argv[++i];
    } else if (arg == "--port-file" && i + 1 < argc) {
      port_file = argv[++i];
    } else if (arg == "--once") {
      once = true;
    } else if (arg.starts_with("-")) {
      return Usage();
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty() == script.empty()) return Usage();

  std::vector<FakeReply> replies;
  if (std::string error; !script.empty() && !kpilot::llm::testing::LoadFakeScript(script, &replies, &error)) {
    std::cerr << "fake_llm_server: " << error << "\n";
    return 2;
  }
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "fake_llm_server: cannot read " << file << "\n";
      return 2;
    }
    std::ostringstream text;
    text << in.rdbuf();
    replies.push_back(FakeReply::Code(text.str(), file.ends_with(".cu") ? "cuda" : "cpp"));
  }

  // Block the signals before any thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  FakeLlmServer server;
  std::mutex mu;
  size_t next = 0;
  server.SetFallback([&](const RecordedRequest&) {
    std::lock_guard lock(mu);
    if (next >= replies.size()) {
      if (once) return FakeReply::Error(500, "fake_llm_server: script exhausted (--once)");
      next = 0;
    }
    return replies[next++];
  });

  std::cout << server.BaseUrl() << std::endl;
  if (!port_file.empty()) {
    std::ofstream out(port_file);
    out << server.BaseUrl() << "\n";
  }
  int received = 0;
  sigwait(&signals, &received);
  server.Stop();
  std::cout << "answered " << server.RequestCount() << " requests" << std::endl;
  return 0;
}
