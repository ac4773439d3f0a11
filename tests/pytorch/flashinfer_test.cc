// flashinfer-bench definitions and workloads loaded into a Task (the team's examples and bad
// inputs), Trace records checked by flashinfer-bench's own schema classes, the contest score.
#include <gtest/gtest.h>

#include <fstream>

#include "core/fs.h"
#include "core/subprocess.h"
#include "pytorch/pytorch.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

const fs::path kExamples = fs::path(KPILOT_SOURCE_DIR) / "examples" / "flashinfer";

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const Workload& WorkloadAt(const Task& t, size_t i) { return t.workloads.at(i); }

TEST(FlashInferLoad, RmsnormFromTheDatasetLayout) {
  auto r = LoadFlashInferDefinition(kExamples / "definitions/rmsnorm/rmsnorm_h512.json", std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Task& t = *r;
  EXPECT_EQ(t.name, "rmsnorm_h512");
  EXPECT_EQ(t.format, TaskFormat::kFlashInfer);
  EXPECT_EQ(t.backend, Backend::kCuda);
  EXPECT_EQ(t.reference.kind, ReferenceKind::kPython);
  EXPECT_EQ(t.reference.entry, "run");
  EXPECT_EQ(t.reference.path, kExamples / "definitions/rmsnorm/rmsnorm_h512.json");
  EXPECT_DOUBLE_EQ(t.tolerance.atol, 1e-2);
  EXPECT_DOUBLE_EQ(t.tolerance.rtol, 1e-2);

  ASSERT_EQ(t.inputs.size(), 2u);
  EXPECT_EQ(t.inputs[0].name, "hidden_states");  // definition order, not alphabetical
  EXPECT_EQ(t.inputs[1].name, "weight");
  EXPECT_EQ(t.inputs[0].dtype, DType::kBF16);
  EXPECT_EQ(t.inputs[0].shape, (std::vector<std::string>{"batch_size", "hidden_size"}));
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].name, "output");
  EXPECT_TRUE(t.scalars.empty());

  ASSERT_EQ(t.workloads.size(), 4u);
  const Workload& w = WorkloadAt(t, 1);
  EXPECT_EQ(w.name, "d8e37b15");  // the uuid's first 8 characters
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.axes.at("batch_size"), 37);
  EXPECT_EQ(w.axes.at("hidden_size"), 512);  // const axes bound in every workload
  EXPECT_EQ(t.ShapeOf(t.outputs[0], w), (std::vector<int64_t>{37, 512}));
  // Minimum traffic: x and output (37×512 bf16) plus the weight (512 bf16).
  EXPECT_DOUBLE_EQ(w.min_bytes, 2.0 * 37 * 512 * 2 + 512 * 2);
  EXPECT_EQ(nlohmann::json::parse(w.record)["uuid"], "d8e37b15-2a6c-4b90-b4f1-7c5e0a9d2e38");
}

TEST(FlashInferLoad, SafetensorsPathsBecomeAbsoluteUnderTheDatasetRoot) {
  auto r = LoadFlashInferDefinition(kExamples / "definitions/rmsnorm/rmsnorm_h512.json", std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto rec = nlohmann::json::parse(WorkloadAt(*r, 3).record);
  fs::path p = rec["inputs"]["hidden_states"]["path"].get<std::string>();
  EXPECT_TRUE(p.is_absolute());
  EXPECT_EQ(p, kExamples / "blob/workloads/rmsnorm/rmsnorm_h512/5c1e2a90.safetensors");
  EXPECT_TRUE(fs::is_regular_file(p));
  EXPECT_EQ(rec["inputs"]["hidden_states"]["tensor_key"], "hidden_states");
}

TEST(FlashInferLoad, ScalarInputIsAnAbiScalarWithPerWorkloadValues) {
  auto r = LoadFlashInferDefinition(kExamples / "definitions/softmax/softmax_temperature_v4096.json", std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->inputs.size(), 1u);
  EXPECT_EQ(r->inputs[0].name, "logits");
  ASSERT_EQ(r->scalars.size(), 1u);
  EXPECT_EQ(r->scalars[0].name, "temperature");
  EXPECT_EQ(r->scalars[0].dtype, DType::kF32);
  ASSERT_EQ(r->workloads.size(), 4u);
  EXPECT_DOUBLE_EQ(WorkloadAt(*r, 1).scalar_values.at("temperature"), 0.7);
  EXPECT_DOUBLE_EQ(WorkloadAt(*r, 3).scalar_values.at("temperature"), 0.25);
  // The scalar adds its 4 bytes to the traffic estimate.
  EXPECT_DOUBLE_EQ(WorkloadAt(*r, 1).min_bytes, 2.0 * 16 * 4096 * 4 + 4);
}

TEST(FlashInferLoad, EveryExampleDefinitionLoadsWithThreeOrMoreWorkloads) {
  int definitions = 0;
  for (const auto& e : fs::recursive_directory_iterator(kExamples / "definitions")) {
    if (e.path().extension() != ".json") continue;
    ++definitions;
    auto r = LoadFlashInferDefinition(e.path(), std::nullopt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_GE(r->workloads.size(), 3u) << e.path();
    bool any_file = false;
    for (const auto& w : r->workloads) any_file |= Contains(w.record, "\"safetensors\"");
    EXPECT_TRUE(any_file) << e.path() << " has no workload with a safetensors input";
  }
  EXPECT_GE(definitions, 3);
}

// A scratch dataset for bad inputs.
class FlashInferErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-flashinfer-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(*d));
  }
  fs::path Write(const std::string& rel, const std::string& text) {
    fs::path p = dir_->path() / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
  // A definition with a var axis `n`, a const axis `k` = 8, input x [n, k], scalar s, output y [n].
  static std::string Definition(const std::string& x_dtype = "float32", const std::string& x_shape = R"(["n", "k"])") {
    return R"({"name": "d", "op_type": "t", "axes": {"n": {"type": "var"}, "k": {"type": "const", "value": 8}},
  "inputs": {"x": {"shape": )" +
           x_shape + R"(, "dtype": ")" + x_dtype + R"("}, "s": {"shape": null, "dtype": "int32"}},
  "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
  "reference": "def run(x, s):\n    return x.sum(-1) * s\n"})";
  }
  static constexpr const char* kGood = R"({"uuid": "00000001-aaaa", "axes": {"n": 4},)"
                                       R"( "inputs": {"x": {"type": "random"}, "s": {"type": "scalar", "value": 3}}})";

  Status Load(const std::string& definition, const std::string& jsonl) {
    fs::path def = Write("d.json", definition);
    Write("d.jsonl", jsonl);
    auto r = LoadFlashInferDefinition(def, std::nullopt);
    EXPECT_FALSE(r.ok());
    return r.status();
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(FlashInferErrors, WorkloadsBesideTheDefinitionAndExplicitOnesAreFound) {
  fs::path def = Write("d.json", Definition());
  Write("d.jsonl", std::string(kGood) + "\n");
  auto r = LoadFlashInferDefinition(def, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->workloads.at(0).name, "00000001");
  EXPECT_EQ(r->workloads.at(0).axes.at("k"), 8);

  fs::path other = Write("elsewhere/more.jsonl", "\n" + std::string(kGood) + "\n" +
                                                     R"({"uuid": "00000002", "axes": {"n": 1}, "inputs": {}})" + "\n");
  r = LoadFlashInferDefinition(def, other);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->workloads.size(), 2u);
  EXPECT_EQ(r->workloads[1].line, 3);  // blank lines count
}

TEST_F(FlashInferErrors, WorkloadTracesAsInFlashInferBenchDatasets) {
  fs::path def = Write("d.json", Definition());
  Write("d.jsonl",
        R"({"definition": "d", "workload": )" + std::string(kGood) + R"(, "solution": null, "evaluation": null})");
  auto r = LoadFlashInferDefinition(def, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto record = nlohmann::json::parse(r->workloads.at(0).record);
  EXPECT_EQ(record["uuid"], "00000001-aaaa") << "the record is the trace's workload";
  EXPECT_FALSE(record.contains("definition"));

  Status s =
      Load(Definition(), R"({"definition": "other", "workload": {"uuid": "00000002", "axes": {}, "inputs": {}}})");
  EXPECT_TRUE(Contains(s.message(), "d.jsonl:1: definition: is \"other\", not this definition's name \"d\""))
      << s.message();
  EXPECT_TRUE(Contains(s.message(), "d.jsonl:1: workload.axes.n: var axis is not bound")) << s.message();
}

TEST_F(FlashInferErrors, NoWorkloadsSaysWhereItLookedAndWhatToPass) {
  fs::path def = Write("definitions/t/d.json", Definition());
  auto r = LoadFlashInferDefinition(def, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(r.status().message(), (dir_->path() / "workloads/t/d.jsonl").string())) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "--workloads")) << r.status().message();
}

TEST_F(FlashInferErrors, ShapeNamingAnUndeclaredAxis) {
  Status s = Load(Definition("float32", R"(["n", "m"])"), kGood);
  EXPECT_TRUE(Contains(s.message(), "d.json: inputs.x.shape: axis \"m\" is not declared in axes")) << s.message();
}

TEST_F(FlashInferErrors, UnknownAndUnsupportedDTypesNameTheField) {
  Status s = Load(Definition("float4_e2m1"), kGood);
  EXPECT_TRUE(Contains(s.message(), "inputs.x.dtype: float4_e2m1 is not supported")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "bfloat16")) << "lists what is supported: " << s.message();
  s = Load(Definition("complex64"), kGood);
  EXPECT_TRUE(Contains(s.message(), "inputs.x.dtype: unknown dtype \"complex64\"")) << s.message();
}

TEST_F(FlashInferErrors, BadJsonlLineNamesItsLine) {
  Status s = Load(Definition(), std::string(kGood) + "\n{\"uuid\": \"x\", \n");
  EXPECT_TRUE(Contains(s.message(), "d.jsonl:2: record: not valid JSON")) << s.message();
}

TEST_F(FlashInferErrors, VarAxisMissingFromARecord) {
  Status s = Load(Definition(), std::string(kGood) + "\n" + R"({"uuid": "00000002", "axes": {}, "inputs": {}})" + "\n");
  EXPECT_TRUE(Contains(s.message(), "d.jsonl:2: axes.n: var axis is not bound")) << s.message();
}

TEST_F(FlashInferErrors, RecordProblemsAreAllReported) {
  Status s =
      Load(Definition(), R"({"uuid": "00000001", "axes": {"n": 4, "k": 9, "z": 1}, "inputs": {)"
                         R"("x": {"type": "scalar", "value": 1}, "q": {"type": "random"}, "s": {"type": "file"}}})"
                         "\n"
                         R"({"uuid": "00000001-bb", "axes": {"n": 2}, "inputs": {)"
                         R"("x": {"type": "safetensors", "path": "no.safetensors", "tensor_key": "x"}}})");
  const std::string& m = s.message();
  EXPECT_TRUE(Contains(m, "d.jsonl:1: axes.k: const axis is 8 in the definition, not 9")) << m;
  EXPECT_TRUE(Contains(m, "d.jsonl:1: axes.z: no such axis")) << m;
  EXPECT_TRUE(Contains(m, "d.jsonl:1: inputs.x: a scalar value for a tensor input")) << m;
  EXPECT_TRUE(Contains(m, "d.jsonl:1: inputs.q: no such input")) << m;
  EXPECT_TRUE(Contains(m, "d.jsonl:1: inputs.s.type: unknown input type \"file\"")) << m;
  EXPECT_TRUE(Contains(m, "d.jsonl:2: uuid: starts with the same 8 characters as line 1's")) << m;
}

TEST_F(FlashInferErrors, MissingSafetensorsFile) {
  Status s = Load(Definition(), R"({"uuid": "00000001", "axes": {"n": 2}, "inputs": {)"
                                R"("x": {"type": "safetensors", "path": "no.safetensors", "tensor_key": "x"}}})");
  std::string file = (dir_->path() / "no.safetensors").string();
  EXPECT_TRUE(Contains(s.message(), "d.jsonl:1: inputs.x.path: file " + file + " not found")) << s.message();
}

TEST_F(FlashInferErrors, DefinitionThatIsNotJsonOrLacksFields) {
  Status s = Load("{\n  \"name\": \"d\",\n  oops\n}", kGood);
  EXPECT_TRUE(Contains(s.message(), "d.json:3: not valid JSON")) << s.message();
  s = Load(R"({"name": "d", "axes": {"n": {"type": "sometimes"}}, "inputs": {},)"
           R"( "outputs": {"y": {"shape": ["n"], "dtype": "float32"}}})",
           kGood);
  EXPECT_TRUE(Contains(s.message(), "d.json: op_type: required field is missing")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "d.json: reference: required field is missing")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "axes.n.type: expected \"const\" or \"var\"")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "inputs: expected a non-empty object")) << s.message();
}

// ---- Trace records -----------------------------------------------------------------------------

TraceInput Passed() {
  TraceInput in;
  in.definition = "rmsnorm_h512";
  in.workload = {{"name", "d8e37b15"},
                 {"uuid", "d8e37b15-2a6c-4b90-b4f1-7c5e0a9d2e38"},
                 {"axes", {{"batch_size", 37}}},
                 {"inputs", {{"hidden_states", {{"type", "random"}}}, {"weight", {{"type", "random"}}}}}};
  in.solution = "rmsnorm_python";
  in.status = "PASSED";
  in.max_abs_error = 0.0078125;
  in.max_rel_error = 0.004;
  in.latency_ms = 0.01;
  in.reference_latency_ms = 0.03;
  in.environment = {{"hardware", "NVIDIA H200"}, {"libs", {{"torch", "2.11.0"}}}};
  in.timestamp = "2026-11-30T10:00:00Z";
  return in;
}

TEST(FlashInferTrace, PassedRecordHasCorrectnessAndPerformance) {
  nlohmann::json t = TraceRecord(Passed());
  EXPECT_EQ(t["definition"], "rmsnorm_h512");
  EXPECT_EQ(t["solution"], "rmsnorm_python");
  EXPECT_FALSE(t["workload"].contains("name")) << "only the schema's workload fields";
  EXPECT_EQ(t["workload"]["axes"]["batch_size"], 37);
  const auto& e = t["evaluation"];
  EXPECT_EQ(e["status"], "PASSED");
  EXPECT_DOUBLE_EQ(e["correctness"]["max_absolute_error"].get<double>(), 0.0078125);
  EXPECT_DOUBLE_EQ(e["performance"]["speedup_factor"].get<double>(), 3.0);
  EXPECT_EQ(e["environment"]["libs"]["torch"], "2.11.0");
}

TEST(FlashInferTrace, FailuresCarryOnlyWhatTheSchemaAllows) {
  TraceInput in = Passed();
  in.status = "INCORRECT_NUMERICAL";
  in.max_abs_error = std::nan("");
  nlohmann::json t = TraceRecord(in);
  EXPECT_EQ(t["evaluation"]["correctness"]["max_absolute_error"], "NaN");
  EXPECT_FALSE(t["evaluation"].contains("performance"));
  in.status = "RUNTIME_ERROR";
  in.environment = nullptr;
  in.timestamp = "";
  t = TraceRecord(in);
  EXPECT_FALSE(t["evaluation"].contains("correctness"));
  EXPECT_EQ(t["evaluation"]["environment"]["hardware"], "unknown");
  EXPECT_FALSE(t["evaluation"]["timestamp"].get<std::string>().empty());
}

// Every status, written as Trace JSONL and read back by flashinfer-bench's own pydantic classes
// (the package installed in .venv-torch by setup; skipped where it is not).
TEST(FlashInferTrace, FlashInferBenchValidatesEveryLine) {
  fs::path python = fs::path(KPILOT_SOURCE_DIR) / ".venv-torch/bin/python";
  if (!fs::exists(python)) GTEST_SKIP() << python << " not found (run setup to install flashinfer-bench)";
  auto check = SystemProcessRunner().Run({{python.string(), "-c", "import flashinfer_bench.data"}});
  if (!check.ok() || !check->Succeeded()) GTEST_SKIP() << "flashinfer-bench is not installed in " << python;

  auto dir = TempDir::Create("kpilot-trace-test-");
  ASSERT_TRUE(dir.ok());
  fs::path jsonl = dir->path() / "traces.jsonl";
  std::string text;
  int records = 0;
  for (const char* status : {"PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR",
                             "COMPILE_ERROR", "TIMEOUT"}) {
    TraceInput in = Passed();
    in.status = status;
    if (std::string(status) == "INCORRECT_NUMERICAL") in.max_rel_error = INFINITY;
    if (std::string(status) == "TIMEOUT") in.environment = nullptr;
    text += TraceRecord(in).dump() + "\n";
    ++records;
  }
  // A record made from a loaded example's workload (absolute safetensors paths).
  auto task = LoadFlashInferDefinition(kExamples / "definitions/rmsnorm/rmsnorm_h512.json", std::nullopt);
  ASSERT_TRUE(task.ok()) << task.status().message();
  TraceInput in = Passed();
  in.workload = nlohmann::json::parse(task->workloads.at(3).record);
  text += TraceRecord(in).dump() + "\n";
  ++records;
  ASSERT_TRUE(WriteFileAtomic(jsonl, text).ok());

  const char* kValidate =
      "import sys\n"
      "from flashinfer_bench.data import Trace\n"
      "n = 0\n"
      "for line in open(sys.argv[1]):\n"
      "    t = Trace.model_validate_json(line)\n"
      "    assert not t.is_workload_trace()\n"
      "    assert t.is_successful() == (t.evaluation.status.value == 'PASSED')\n"
      "    n += 1\n"
      "print(n)\n";
  auto r = SystemProcessRunner().Run({{python.string(), "-c", kValidate, jsonl.string()}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->Succeeded()) << r->err;
  EXPECT_EQ(std::stoi(r->out), records);
}

TEST(FlashInferScore, MeanSpeedupOrZeroWhenAnyWorkloadFails) {
  EXPECT_DOUBLE_EQ(ContestScore({1.0, 2.0, 4.5}, {true, true, true}), 2.5);
  EXPECT_DOUBLE_EQ(ContestScore({1.0, 2.0, 4.5}, {true, false, true}), 0.0);
  EXPECT_DOUBLE_EQ(ContestScore({}, {}), 0.0);
  EXPECT_DOUBLE_EQ(ContestScore({2.0}, {true, true}), 0.0);
}

}  // namespace
}  // namespace kpilot
