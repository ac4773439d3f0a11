// The CLI's pieces of --executor slurm and --compile-on slurm (docs/slurm.md).
#include <iostream>

#include "cli/cli.h"
#include "pytorch/pytorch.h"

namespace kpilot::cli {

slurm::PythonRunnerFactory ClusterPythonWorkers(const std::string& python) {
  return [python](ProcessRunner& steps,
                  const std::filesystem::path& work_root) -> Result<std::unique_ptr<PythonTaskRunner>> {
    auto worker = FindPythonWorker(python, PythonPackageDir());
    if (!worker.ok()) return worker.status();
    worker->sandbox_runner = RunnerPath();
    worker->work_root = work_root;
    return std::unique_ptr<PythonTaskRunner>(std::make_unique<WorkerTaskRunner>(steps, *worker));
  };
}

void AddCompileOnFlag(CLI::App* cmd, std::string* compile_on) {
  cmd->add_option("--compile-on", *compile_on,
                  "local | slurm: where the compilers run — slurm: job steps of one allocation on the CPU nodes "
                  "of --slurm-config's compile_partition (docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
}

Result<std::unique_ptr<slurm::CompileAllocation>> StartCompileOn(const std::string& compile_on,
                                                                 const std::string& slurm_config,
                                                                 const std::string& job_name, bool quiet) {
  if (compile_on != "slurm") return std::unique_ptr<slurm::CompileAllocation>();
  if (slurm_config.empty())
    return Status::InvalidInput(
        "--compile-on slurm needs --slurm-config FILE (its compile_partition and compile_cpus; docs/slurm.md)");
  auto config = slurm::LoadSlurmConfig(slurm_config);
  if (!config.ok()) return config.status();
  if (!quiet) std::cerr << "kpilot: asking Slurm for the compile allocation …\n";
  auto started = slurm::CompileAllocation::Start(SystemProcessRunner(), SystemClock(), *config, job_name);
  if (!started.ok()) return started.status();
  if (!quiet) std::cerr << "kpilot: compiles run in " << (*started)->Where() << "\n";
  return started;
}

}  // namespace kpilot::cli
