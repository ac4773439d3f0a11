// kpilot: optimizes GPU kernels in a closed loop. See README.md.
#include <iostream>

#include "cli/cli.h"

namespace {

// The subcommands, in the order `kpilot --help` lists them.
const kpilot::cli::Command kCommands[] = {
    {"doctor", kpilot::cli::AddDoctorCommand},       {"eval", kpilot::cli::AddEvalCommand},
    {"calibrate", kpilot::cli::AddCalibrateCommand}, {"profile", kpilot::cli::AddProfileCommand},
    {"optimize", kpilot::cli::AddOptimizeCommand},   {"sweep", kpilot::cli::AddSweepCommand},
    {"bench", kpilot::cli::AddBenchCommand},         {"lineage", kpilot::cli::AddLineageCommand},
    {"runs", kpilot::cli::AddRunsCommands},          {"report", kpilot::cli::AddReportCommand},
    {"skills", kpilot::cli::AddSkillsCommand},       {"mcp", kpilot::cli::AddMcpCommand},
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kpilot — closed-loop GPU kernel optimization (task → candidate → compile → run → verdict)"};
  app.set_version_flag("--version", "kpilot " KPILOT_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  for (const auto& c : kCommands) c.add(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kpilot::cli::kExitUsage;
  } catch (const std::exception& e) {
    // A defect of kpilot's, not of the input: say so instead of aborting. What a run recorded
    // stays in the store (--resume continues it).
    std::cerr << "kpilot: internal error: " << e.what() << " (a defect of kpilot's: please report it)\n";
    return kpilot::cli::kExitInternal;
  }
  return exit_code;
}
