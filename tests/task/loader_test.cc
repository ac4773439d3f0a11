// Loading valid task folders: every field lands where the Task model says.
#include "task/loader.h"

#include <gtest/gtest.h>

#include <cmath>

#include "task_test_util.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;
using testing_util::TaskDir;

const fs::path kSaxpy = fs::path(KPILOT_FIXTURES_DIR) / "tasks" / "saxpy";

TEST(LoadTask, SaxpyFixtureHasEveryField) {
  auto r = LoadTask(kSaxpy);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Task& t = *r;
  EXPECT_EQ(t.name, "saxpy");
  EXPECT_EQ(t.description, "y = a*x + y over n floats");
  EXPECT_EQ(t.backend, Backend::kHost);
  EXPECT_TRUE(t.dir.is_absolute());
  EXPECT_EQ(t.dir, fs::absolute(kSaxpy).lexically_normal());

  EXPECT_EQ(t.reference.name, "reference");
  EXPECT_EQ(t.reference.path, t.dir / "reference.cpp");
  EXPECT_EQ(t.reference.kind, ReferenceKind::kNative);
  EXPECT_TRUE(t.reference.entry.empty());
  ASSERT_EQ(t.baselines.size(), 1u);
  EXPECT_EQ(t.baselines[0].name, "blas_like");
  EXPECT_EQ(t.baselines[0].path, t.dir / "baseline.cpp");
  EXPECT_TRUE(t.baselines[0].path.is_absolute());
  EXPECT_EQ(&t.Baseline(), &t.baselines[0]);

  ASSERT_EQ(t.inputs.size(), 2u);
  EXPECT_EQ(t.inputs[0].name, "x");
  EXPECT_EQ(t.inputs[0].dtype, DType::kF32);
  EXPECT_EQ(t.inputs[0].shape, std::vector<std::string>{"n"});
  EXPECT_EQ(t.inputs[0].init.kind, InitKind::kNormal);
  EXPECT_EQ(t.inputs[0].init.a, 0.5);
  EXPECT_EQ(t.inputs[0].init.b, 2.0);
  EXPECT_EQ(t.inputs[0].line, 14);
  EXPECT_FALSE(t.inputs[0].tolerance.has_value());
  EXPECT_EQ(t.inputs[1].name, "y_in");
  EXPECT_EQ(t.inputs[1].init.kind, InitKind::kUniform);
  EXPECT_EQ(t.inputs[1].init.a, -1.0);
  EXPECT_EQ(t.inputs[1].init.b, 1.0);

  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].name, "y");
  ASSERT_TRUE(t.outputs[0].tolerance.has_value());
  // The output overrides atol and inherits the rest from [tolerance].
  EXPECT_EQ(t.outputs[0].tolerance->atol, 1e-4);
  EXPECT_EQ(t.outputs[0].tolerance->rtol, 2e-5);
  EXPECT_EQ(t.outputs[0].tolerance->matched_ratio, 0.99);
  EXPECT_EQ(t.ToleranceOf(t.outputs[0]).atol, 1e-4);

  ASSERT_EQ(t.scalars.size(), 1u);
  EXPECT_EQ(t.scalars[0].name, "a");
  EXPECT_EQ(t.scalars[0].dtype, DType::kF32);
  EXPECT_EQ(t.scalars[0].value, 2.5);
  EXPECT_EQ(t.scalars[0].line, 32);

  EXPECT_EQ(t.tolerance.atol, 1e-5);
  EXPECT_EQ(t.tolerance.rtol, 2e-5);
  EXPECT_EQ(t.tolerance.matched_ratio, 0.99);

  ASSERT_EQ(t.workloads.size(), 2u);
  EXPECT_EQ(t.workloads[0].name, "1M");
  EXPECT_EQ(t.workloads[0].axes, (std::map<std::string, int64_t>{{"n", 1048576}}));
  EXPECT_EQ(t.workloads[0].scalar_values, (std::map<std::string, double>{{"a", 3.0}}));
  EXPECT_EQ(t.workloads[0].flops, 2.0 * 1048576);
  EXPECT_EQ(t.workloads[0].min_bytes, 12.0 * 1048576);
  EXPECT_EQ(t.workloads[1].name, "16M");
  EXPECT_TRUE(t.workloads[1].scalar_values.empty());
  EXPECT_EQ(t.workloads[1].flops, 2.0 * 16777216);
  EXPECT_EQ(t.workloads[1].min_bytes, 12.0 * 16777216);
  EXPECT_EQ(t.FindWorkload("16M"), &t.workloads[1]);
  EXPECT_EQ(t.ShapeOf(t.inputs[0], t.workloads[1]), std::vector<int64_t>{16777216});
  EXPECT_EQ(t.flops_formula, "2*n");
  EXPECT_EQ(t.bytes_formula, "12*n");

  ASSERT_EQ(t.params.size(), 2u);
  EXPECT_EQ(t.params[0].name, "BLOCK");
  EXPECT_EQ(t.params[0].values, (std::vector<std::string>{"64", "128", "256", "512"}));
  EXPECT_EQ(t.params[1].name, "VEC");
  EXPECT_EQ(t.params[1].values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(t.constraints, std::vector<std::string>{"BLOCK * VEC <= 2048"});
}

TEST(LoadTask, AcceptsPathToTheFileAndRelativePaths) {
  auto by_file = LoadTask(kSaxpy / "task.toml");
  ASSERT_TRUE(by_file.ok()) << by_file.status().ToString();
  EXPECT_EQ(by_file->dir, fs::absolute(kSaxpy).lexically_normal());

  fs::path cwd = fs::current_path();
  fs::current_path(kSaxpy.parent_path());
  auto relative = LoadTask("saxpy/./");
  fs::current_path(cwd);
  ASSERT_TRUE(relative.ok()) << relative.status().ToString();
  EXPECT_TRUE(relative->dir.is_absolute());
  EXPECT_EQ(relative->reference.path, fs::absolute(kSaxpy / "reference.cpp").lexically_normal());
}

TEST(LoadTask, MissingFolderOrFileIsNotFound) {
  TaskDir dir;
  auto no_file = LoadTask(dir.path());
  EXPECT_EQ(no_file.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(no_file.status().message(), "task.toml"));
  auto no_dir = LoadTask(dir.path() / "nowhere");
  EXPECT_EQ(no_dir.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(no_dir.status().message(), "nowhere"));
}

TEST(LoadTask, DefaultsForOmittedFields) {
  TaskDir dir;
  dir.Write("reference.cpp", "");
  dir.Write("task.toml", R"(name = "defaults"
backend = "host"
reference = "reference.cpp"

[[inputs]]
name = "x"
dtype = "i32"
shape = ["n"]

[[inputs]]
name = "idx"
dtype = "u8"
shape = []
init = { dist = "randint" }

[[inputs]]
name = "ramp"
dtype = "f64"
shape = ["n"]
init = { dist = "range", step = 0.5 }

[[inputs]]
name = "fill"
dtype = "bf16"
shape = ["n"]
init = { dist = "constant", value = -inf }

[[outputs]]
name = "y"
dtype = "f32"
shape = ["n"]

[[workloads]]
name = "only"
axes = { n = 7 }
)");
  auto r = LoadTask(dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Task& t = *r;
  EXPECT_TRUE(t.description.empty());
  EXPECT_EQ(t.tolerance.atol, 1e-5);
  EXPECT_EQ(t.tolerance.rtol, 1e-5);
  EXPECT_EQ(t.tolerance.matched_ratio, 1.0);
  EXPECT_EQ(t.inputs[0].init.kind, InitKind::kNormal);
  EXPECT_EQ(t.inputs[0].init.a, 0);
  EXPECT_EQ(t.inputs[0].init.b, 1);
  EXPECT_TRUE(t.inputs[1].shape.empty());
  EXPECT_EQ(t.inputs[1].init.kind, InitKind::kRandint);
  EXPECT_EQ(t.inputs[1].init.a, 0);
  EXPECT_EQ(t.inputs[1].init.b, 10);
  EXPECT_EQ(t.inputs[2].init.kind, InitKind::kRange);
  EXPECT_EQ(t.inputs[2].init.a, 0);
  EXPECT_EQ(t.inputs[2].init.b, 0.5);
  EXPECT_EQ(t.inputs[3].init.kind, InitKind::kConstant);
  EXPECT_EQ(t.inputs[3].init.a, -INFINITY);
  EXPECT_FALSE(t.outputs[0].tolerance.has_value());
  EXPECT_EQ(t.ToleranceOf(t.outputs[0]).atol, 1e-5);
  EXPECT_TRUE(t.baselines.empty());
  EXPECT_EQ(&t.Baseline(), &t.reference);
  EXPECT_EQ(t.workloads[0].flops, 0);
  EXPECT_EQ(t.workloads[0].min_bytes, 0);
  EXPECT_TRUE(t.flops_formula.empty());
  EXPECT_TRUE(t.params.empty());
  EXPECT_TRUE(t.constraints.empty());
}

TEST(LoadTask, CudaGemmWithSeveralAxesScalarsAndParamKinds) {
  TaskDir dir;
  dir.Write("kernels/ref.cu", "");
  dir.Write("task.toml", R"(name = "gemm-bf16"
backend = "cuda"
reference = "kernels/ref.cu"
libraries = true
cutlass = false
compute_precision = "bf16"
constraints = ["BM * BN <= 16384", "SPLIT_K >= 1"]

[[inputs]]
name = "A"
dtype = "bf16"
shape = ["m", "k"]

[[inputs]]
name = "B"
dtype = "bf16"
shape = ["k", "n"]

[[outputs]]
name = "C"
dtype = "f32"
shape = ["m", "n"]
tolerance = { atol = 1e-2, rtol = 1e-2, matched_ratio = 0.999 }

[[scalars]]
name = "alpha"
dtype = "f32"
value = 1

[[scalars]]
name = "count"
dtype = "i32"
value = -3

[[scalars]]
name = "flag"
dtype = "bool"
value = true

[[workloads]]
name = "square"
axes = { m = 4096, n = 4096, k = 4096 }
scalars = { alpha = 0.5, flag = false }

[[workloads]]
name = "skinny"
axes = { m = 16, n = 8192, k = 1024 }

[roofline]
flops = "2*m*n*k"
bytes = "2*(m*k + k*n) + 4*m*n"

[params]
BM = [64, 128]
BN = [64, 128]
SPLIT_K = [1, 2]
SCALE = [0.5, 2.0, 1e-3]
LAYOUT = ["row", "col"]
)");
  auto r = LoadTask(dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Task& t = *r;
  EXPECT_EQ(t.backend, Backend::kCuda);
  EXPECT_EQ(t.reference.path, t.dir / "kernels" / "ref.cu");
  EXPECT_FALSE(t.cutlass);
  EXPECT_EQ(t.inputs[0].shape, (std::vector<std::string>{"m", "k"}));
  EXPECT_EQ(t.outputs[0].tolerance->matched_ratio, 0.999);
  EXPECT_EQ(t.scalars[0].value, 1.0);
  EXPECT_EQ(t.scalars[1].dtype, DType::kI32);
  EXPECT_EQ(t.scalars[1].value, -3.0);
  EXPECT_EQ(t.scalars[2].dtype, DType::kBool);
  EXPECT_EQ(t.scalars[2].value, 1.0);
  EXPECT_EQ(t.workloads[0].scalar_values, (std::map<std::string, double>{{"alpha", 0.5}, {"flag", 0.0}}));
  EXPECT_EQ(t.workloads[0].flops, 2.0 * 4096 * 4096 * 4096);
  EXPECT_EQ(t.workloads[1].flops, 2.0 * 16 * 8192 * 1024);
  EXPECT_EQ(t.workloads[1].min_bytes, 2.0 * (16 * 1024 + 1024 * 8192) + 4.0 * 16 * 8192);
  EXPECT_EQ(t.ShapeOf(t.outputs[0], t.workloads[1]), (std::vector<int64_t>{16, 8192}));
  ASSERT_EQ(t.params.size(), 5u);
  EXPECT_EQ(t.params[3].name, "SCALE");
  EXPECT_EQ(t.params[3].values, (std::vector<std::string>{"0.5", "2.0", "0.001"}));
  EXPECT_EQ(t.params[4].values, (std::vector<std::string>{"row", "col"}));
  EXPECT_EQ(t.constraints.size(), 2u);
}

}  // namespace
}  // namespace kpilot
