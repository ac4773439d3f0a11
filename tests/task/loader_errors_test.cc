// Loading invalid task.toml files: every problem is reported as
// "task.toml:LINE: field: problem — fix", all of them at once.
#include <gtest/gtest.h>

#include "task/loader.h"
#include "task_test_util.h"

namespace kpilot {
namespace {

using testing_util::Contains;
using testing_util::HasProblem;
using testing_util::LineContaining;
using testing_util::ProblemCount;
using testing_util::TaskDir;

const std::string kTop = "name = \"t\"\nbackend = \"host\"\nreference = \"reference.cpp\"\n";
const std::string kIn = "[[inputs]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\n\n";
const std::string kOut = "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"n\"]\n\n";
const std::string kWork = "[[workloads]]\nname = \"small\"\naxes = { n = 16 }\n\n";

class LoaderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("reference.cpp", "");
    dir_.Write("reference.cu", "");
    dir_.Write("baseline.cpp", "");
  }

  // Writes `toml` as the task's task.toml and returns what loading it says.
  Status Load(const std::string& toml) {
    toml_ = toml;
    dir_.Write("task.toml", toml);
    auto r = LoadTask(dir_.path());
    EXPECT_FALSE(r.ok()) << "expected problems in:\n" << toml;
    return r.status();
  }
  // Line of the nth occurrence of `snippet` in the last document loaded.
  int Line(const std::string& snippet, int nth = 1) const { return LineContaining(toml_, snippet, nth); }

  TaskDir dir_;
  std::string toml_;
};

TEST_F(LoaderErrors, BaseDocumentIsValid) {
  dir_.Write("task.toml", kTop + kIn + kOut + kWork);
  auto r = LoadTask(dir_.path());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(LoaderErrors, DrawRangesAreReadAndChecked) {
  dir_.Write("task.toml", kTop + kIn + kOut + kWork + "[draw]\nn = [100, 5000]\n");
  auto ok = LoadTask(dir_.path());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->draw_axes.at("n"), (std::pair<int64_t, int64_t>{100, 5000}));

  Status s = Load(kTop + kIn + kOut + kWork + "[draw]\nm = [1, 2]\nn = [5000, 100]\n");
  EXPECT_TRUE(HasProblem(s, Line("m = [1, 2]"), "draw.m", "not used by any tensor shape")) << s.message();
  EXPECT_TRUE(HasProblem(s, Line("n = [5000, 100]"), "draw.n", "empty")) << s.message();
  s = Load(kTop + kIn + kOut + kWork + "[draw]\nn = 100\n");
  EXPECT_TRUE(HasProblem(s, Line("n = 100"), "draw.n", "[low, high]")) << s.message();
}

TEST_F(LoaderErrors, SyntaxErrorHasItsLine) {
  Status s = Load(kTop + kIn + "[[outputs]]\nname = = \"y\"\n");
  EXPECT_TRUE(HasProblem(s, Line("name = = "), "syntax", "")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "column"));
}

TEST_F(LoaderErrors, DuplicateParamIsASyntaxError) {
  Status s = Load(kTop + kIn + kOut + kWork + "[params]\nBLOCK = [1]\nBLOCK = [2]\n");
  EXPECT_TRUE(HasProblem(s, Line("BLOCK = [2]"), "syntax", "BLOCK"));
}

TEST_F(LoaderErrors, RequiredTopLevelFields) {
  Status s = Load("description = \"no name\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, 1, "name", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, 1, "backend", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, 1, "reference", "required field is missing"));
  EXPECT_EQ(ProblemCount(s), 3);
}

TEST_F(LoaderErrors, NameAndBackendValues) {
  Status s = Load("name = \"my task!\"\nbackend = \"gpu\"\nreference = \"reference.cpp\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, 1, "name", "letters, digits"));
  EXPECT_TRUE(HasProblem(s, 2, "backend", "unknown backend \"gpu\""));
  EXPECT_TRUE(Contains(s.message(), "use \"host\" or \"cuda\""));
}

TEST_F(LoaderErrors, WrongTypeForString) {
  Status s = Load("name = 3\nbackend = \"host\"\nreference = \"reference.cpp\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, 1, "name", "expected a string, got integer 3"));
}

TEST_F(LoaderErrors, ReferenceMissingFile) {
  Status s = Load("name = \"t\"\nbackend = \"host\"\nreference = \"missing.cpp\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, 3, "reference", "file \"missing.cpp\" not found"));
}

TEST_F(LoaderErrors, ReferenceExtensionMustMatchBackend) {
  Status host = Load("name = \"t\"\nbackend = \"host\"\nreference = \"reference.cu\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(host, 3, "reference", "does not end in .cpp"));
  Status cuda = Load("name = \"t\"\nbackend = \"cuda\"\nreference = \"reference.cpp\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(cuda, 3, "reference", "does not end in .cu"));
}

TEST_F(LoaderErrors, UnknownTopLevelKey) {
  Status s = Load(kTop + "nmae = \"typo\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("nmae"), "nmae", "unknown key"));
  EXPECT_TRUE(Contains(s.message(), "valid keys here are name, description"));
}

TEST_F(LoaderErrors, TopLevelKeyUnderATableGetsAHint) {
  Status s = Load(kTop + kIn + kOut + kWork + "libraries = true\n");
  EXPECT_TRUE(HasProblem(s, Line("libraries"), "workloads[0].libraries", "unknown key"));
  EXPECT_TRUE(Contains(s.message(), "move it above the first [table] header"));
}

TEST_F(LoaderErrors, LibrariesAndComputePrecisionTypes) {
  Status s = Load(kTop + "libraries = \"yes\"\ncutlass = 1\ncompute_precision = \"fp32\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("libraries"), "libraries", "expected a boolean"));
  EXPECT_TRUE(HasProblem(s, Line("cutlass"), "cutlass", "expected a boolean"));
  EXPECT_TRUE(HasProblem(s, Line("compute_precision"), "compute_precision", "unknown dtype \"fp32\""));
}

TEST_F(LoaderErrors, UnknownDType) {
  Status s = Load(kTop + kIn + "[[inputs]]\nname = \"z\"\ndtype = \"float\"\nshape = [\"n\"]\n\n" + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("\"float\""), "inputs[1].dtype", "unknown dtype \"float\""));
  EXPECT_TRUE(Contains(s.message(), "use one of f64, f32, f16, bf16"));
}

TEST_F(LoaderErrors, TensorRequiredFieldsAndNames) {
  Status s = Load(kTop + kIn + "[[outputs]]\nnote = \"nothing else\"\n\n" +
                  "[[outputs]]\nname = \"x-1\"\ndtype = \"f32\"\nshape = [\"n\"]\n\n" + kWork);
  int out0 = Line("[[outputs]]");
  EXPECT_TRUE(HasProblem(s, out0, "outputs[0].name", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, out0, "outputs[0].dtype", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, out0, "outputs[0].shape", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, Line("note"), "outputs[0].note", "unknown key"));
  EXPECT_TRUE(HasProblem(s, Line("\"x-1\""), "outputs[1].name", "not an identifier"));
}

TEST_F(LoaderErrors, Shapes) {
  Status s = Load(kTop + "[[inputs]]\nname = \"a\"\ndtype = \"f32\"\nshape = \"n\"\n\n" +
                  "[[inputs]]\nname = \"b\"\ndtype = \"f32\"\nshape = [\"n\", 4]\n\n" +
                  "[[inputs]]\nname = \"c\"\ndtype = \"f32\"\n" +
                  "shape = [\"n\", \"n\", \"n\", \"n\", \"n\", \"n\", \"n\", \"n\", \"n\"]\n\n" + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("shape = \"n\""), "inputs[0].shape", "expected an array of axis names"));
  EXPECT_TRUE(HasProblem(s, Line("shape = [\"n\", 4]"), "inputs[1].shape[1]", "expected an axis name"));
  EXPECT_TRUE(HasProblem(s, Line("\"n\", \"n\", \"n\""), "inputs[2].shape", "rank 9 exceeds"));
}

TEST_F(LoaderErrors, InitOnOutputAndToleranceOnInput) {
  Status s = Load(kTop +
                  "[[inputs]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
                  "tolerance = { atol = 1.0 }\n\n"
                  "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
                  "init = { dist = \"normal\" }\n\n" +
                  kWork);
  EXPECT_TRUE(HasProblem(s, Line("tolerance ="), "inputs[0].tolerance", "outputs only"));
  EXPECT_TRUE(HasProblem(s, Line("init ="), "outputs[0].init", "inputs only"));
}

TEST_F(LoaderErrors, SectionsMustBeArraysOfTables) {
  Status s = Load(kTop + "inputs = \"x\"\noutputs = 3\nworkloads = [1]\n");
  EXPECT_TRUE(HasProblem(s, Line("inputs ="), "inputs", "expected an array of tables"));
  EXPECT_TRUE(HasProblem(s, Line("outputs ="), "outputs", "expected an array of tables"));
  EXPECT_TRUE(HasProblem(s, Line("workloads ="), "workloads[0]", "expected a table"));
  EXPECT_EQ(ProblemCount(s), 3) << s.message();
}

std::string Input(const std::string& name, const std::string& dtype, const std::string& init) {
  return "[[inputs]]\nname = \"" + name + "\"\ndtype = \"" + dtype + "\"\nshape = [\"n\"]\ninit = " + init + "\n\n";
}

TEST_F(LoaderErrors, InitDistributionsAndParameters) {
  Status s = Load(
      kTop + Input("a", "f32", "{ dist = \"gauss\" }") +
      Input("b", "f32", "{ dist = \"uniform\", low = 0.0, std = 1.0 }") +
      Input("c", "f32", "{ dist = \"uniform\", low = 1.0, high = 1.0 }") +
      Input("d", "i32", "{ dist = \"randint\", low = 5, high = 2 }") +
      Input("e", "i32", "{ dist = \"randint\", low = 0.5, high = 2 }") +
      Input("f", "f32", "{ dist = \"normal\", mean = 1.0, std = 0.0 }") + Input("g", "f32", "{ dist = \"constant\" }") +
      Input("h", "u8", "{ dist = \"randint\", low = 0, high = 300 }") + Input("i", "f32", "\"normal\"") +
      Input("j", "f32", "{ mean = \"0\" }") + Input("k", "f32", "{ dist = \"range\", step = nan }") + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("gauss"), "inputs[0].init.dist", "unknown distribution \"gauss\""));
  EXPECT_TRUE(HasProblem(s, Line("std = 1.0"), "inputs[1].init.std", "not a parameter of \"uniform\""));
  EXPECT_TRUE(Contains(s.message(), "uniform takes low and high"));
  EXPECT_TRUE(HasProblem(s, Line("low = 1.0, high = 1.0"), "inputs[2].init", "low (1) must be less than high (1)"));
  EXPECT_TRUE(HasProblem(s, Line("low = 5, high = 2"), "inputs[3].init", "low (5) must be less than high (2)"));
  EXPECT_TRUE(HasProblem(s, Line("low = 0.5"), "inputs[4].init.low", "must be integers"));
  EXPECT_TRUE(HasProblem(s, Line("std = 0.0"), "inputs[5].init.std", "must be positive"));
  EXPECT_TRUE(HasProblem(s, Line("\"constant\""), "inputs[6].init.value", "required for dist = \"constant\""));
  EXPECT_TRUE(HasProblem(s, Line("high = 300"), "inputs[7].init", "does not fit dtype u8"));
  EXPECT_TRUE(HasProblem(s, Line("init = \"normal\""), "inputs[8].init", "expected a table"));
  EXPECT_TRUE(HasProblem(s, Line("mean = \"0\""), "inputs[9].init.mean", "expected a number"));
  EXPECT_TRUE(HasProblem(s, Line("step = nan"), "inputs[10].init.step", "expected a finite number"));
  EXPECT_EQ(ProblemCount(s), 11) << s.message();
}

TEST_F(LoaderErrors, AxisUsedButNotBound) {
  Status s = Load(kTop + "[[inputs]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"m\", \"n\"]\n\n" + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("axes = { n = 16 }"), "workloads[0].axes",
                         "axis \"m\" is used by inputs[0].shape but not bound"));
  EXPECT_TRUE(Contains(s.message(), "— add m = <size>"));
}

TEST_F(LoaderErrors, WorkloadWithoutAxes) {
  Status s = Load(kTop + kIn + kOut + "[[workloads]]\nname = \"bare\"\n");
  EXPECT_TRUE(
      HasProblem(s, Line("[[workloads]]"), "workloads[0].axes", "axis \"n\" is used by inputs[0].shape but not bound"));
}

TEST_F(LoaderErrors, AxisValuesAndUnusedAxes) {
  Status s = Load(kTop + kIn + kOut + kWork +
                  "[[workloads]]\nname = \"w2\"\n[workloads.axes]\nn = 0\nk = 2\n\n"
                  "[[workloads]]\nname = \"w3\"\naxes = { n = \"1k\" }\n\n"
                  "[[workloads]]\nname = \"w4\"\naxes = { n = 2.5 }\n\n"
                  "[[workloads]]\nname = \"w5\"\naxes = { n = -4 }\n");
  EXPECT_TRUE(HasProblem(s, Line("n = 0"), "workloads[1].axes.n", "must be a positive integer"));
  EXPECT_TRUE(HasProblem(s, Line("k = 2"), "workloads[1].axes.k", "axis \"k\" is not used by any tensor shape"));
  EXPECT_TRUE(HasProblem(s, Line("\"1k\""), "workloads[2].axes.n", "expected an integer, got string \"1k\""));
  EXPECT_TRUE(HasProblem(s, Line("n = 2.5"), "workloads[3].axes.n", "expected an integer, got float 2.5"));
  EXPECT_TRUE(HasProblem(s, Line("n = -4"), "workloads[4].axes.n", "must be a positive integer"));
  EXPECT_EQ(ProblemCount(s), 5) << s.message();
}

TEST_F(LoaderErrors, WorkloadNamesAndKeys) {
  Status s = Load(kTop + kIn + kOut + "[[workloads]]\naxes = { n = 1 }\n\n" +
                  "[[workloads]]\nname = \"big one\"\naxes = { n = 2 }\naxis = { n = 2 }\n");
  EXPECT_TRUE(HasProblem(s, Line("[[workloads]]"), "workloads[0].name", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, Line("big one"), "workloads[1].name", "letters, digits"));
  EXPECT_TRUE(HasProblem(s, Line("axis ="), "workloads[1].axis", "unknown key"));
}

TEST_F(LoaderErrors, NoOutputsAndNoWorkloads) {
  Status s = Load(kTop + kIn);
  EXPECT_TRUE(HasProblem(s, 1, "outputs", "no outputs declared"));
  EXPECT_TRUE(HasProblem(s, 1, "workloads", "no workloads declared"));
}

TEST_F(LoaderErrors, Scalars) {
  auto scalar = [](const std::string& body) { return "[[scalars]]\n" + body + "\n\n"; };
  Status s = Load(
      kTop + kIn + kOut + scalar("name = \"a\"\ndtype = \"f32\"") + scalar("name = \"b\"\nvalue = 1.0") +
      scalar("name = \"c\"\ndtype = \"i32\"\nvalue = 2.5") + scalar("name = \"d\"\ndtype = \"i8\"\nvalue = 300") +
      scalar("name = \"e\"\ndtype = \"f16\"\nvalue = 1e5") + scalar("name = \"f\"\ndtype = \"f32\"\nvalue = true") +
      scalar("name = \"g\"\ndtype = \"int\"\nvalue = 1\nval = 2") +
      "[[workloads]]\nname = \"small\"\naxes = { n = 16 }\n"
      "scalars = { zz = 1.0, c = 0.5 }\n");
  EXPECT_TRUE(HasProblem(s, Line("[[scalars]]", 1), "scalars[0].value", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, Line("[[scalars]]", 2), "scalars[1].dtype", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, Line("value = 2.5"), "scalars[2].value", "2.5 is not a whole number but dtype is i32"));
  EXPECT_TRUE(HasProblem(s, Line("value = 300"), "scalars[3].value", "300 is out of range for i8 (-128..127)"));
  EXPECT_TRUE(HasProblem(s, Line("value = 1e5"), "scalars[4].value", "overflows f16"));
  EXPECT_TRUE(HasProblem(s, Line("value = true"), "scalars[5].value", "expected a number, got boolean true"));
  EXPECT_TRUE(HasProblem(s, Line("\"int\""), "scalars[6].dtype", "unknown dtype \"int\""));
  EXPECT_TRUE(HasProblem(s, Line("val = 2"), "scalars[6].val", "unknown key"));
  EXPECT_TRUE(HasProblem(s, Line("zz = 1.0"), "workloads[0].scalars.zz", "no scalar named \"zz\""));
  EXPECT_TRUE(HasProblem(s, Line("zz = 1.0"), "workloads[0].scalars.c", "0.5 is not a whole number but dtype is i32"));
  EXPECT_EQ(ProblemCount(s), 10) << s.message();
}

TEST_F(LoaderErrors, Tolerances) {
  Status s = Load(kTop + kIn +
                  "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
                  "tolerance = { atol = -1e-3, matched_ratio = 1.5 }\n\n" +
                  kWork + "[tolerance]\natol = -2\nrtol = -0.1\nmatched_ratio = 0\nrtoll = 1\n");
  EXPECT_TRUE(HasProblem(s, Line("atol = -1e-3"), "outputs[0].tolerance.atol", "must be non-negative"));
  EXPECT_TRUE(HasProblem(s, Line("atol = -1e-3"), "outputs[0].tolerance.matched_ratio", "must be in (0, 1], got 1.5"));
  EXPECT_TRUE(HasProblem(s, Line("atol = -2"), "tolerance.atol", "must be non-negative"));
  EXPECT_TRUE(HasProblem(s, Line("rtol = -0.1"), "tolerance.rtol", "must be non-negative"));
  EXPECT_TRUE(HasProblem(s, Line("matched_ratio = 0"), "tolerance.matched_ratio", "must be in (0, 1], got 0"));
  EXPECT_TRUE(HasProblem(s, Line("rtoll"), "tolerance.rtoll", "unknown key"));
  EXPECT_EQ(ProblemCount(s), 6) << s.message();
}

TEST_F(LoaderErrors, ToleranceMustBeATable) {
  Status s = Load(kTop + "tolerance = 1e-3\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(s, Line("tolerance ="), "tolerance", "expected a table"));
}

TEST_F(LoaderErrors, DuplicateNames) {
  Status s = Load(kTop + kIn +
                  "[[outputs]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\n\n"
                  "[[scalars]]\nname = \"x\"\ndtype = \"f32\"\nvalue = 1.0\n\n" +
                  kWork + kWork +
                  "[[baselines]]\nname = \"b\"\nsource = \"baseline.cpp\"\n\n"
                  "[[baselines]]\nname = \"b\"\nsource = \"baseline.cpp\"\n");
  int first_x = Line("name = \"x\"", 1);
  EXPECT_TRUE(HasProblem(s, Line("name = \"x\"", 2), "outputs[0].name",
                         "duplicate name \"x\" (first declared as inputs[0] on line " + std::to_string(first_x) + ")"));
  EXPECT_TRUE(
      HasProblem(s, Line("name = \"x\"", 3), "scalars[0].name", "duplicate name \"x\" (first declared as inputs[0]"));
  EXPECT_TRUE(HasProblem(s, Line("name = \"small\"", 2), "workloads[1].name", "duplicate name \"small\""));
  EXPECT_TRUE(HasProblem(s, Line("name = \"b\"", 2), "baselines[1].name", "duplicate name \"b\""));
  EXPECT_EQ(ProblemCount(s), 4) << s.message();
}

TEST_F(LoaderErrors, RooflineFormulas) {
  Status syntax = Load(kTop + kIn + kOut + kWork + "[roofline]\nflops = \"2*n*\"\nflop = \"n\"\n");
  EXPECT_TRUE(HasProblem(syntax, Line("flops ="), "roofline.flops", "\"2*n*\""));
  EXPECT_TRUE(HasProblem(syntax, Line("flop = "), "roofline.flop", "unknown key"));

  Status names = Load(kTop + kIn + kOut + kWork + "[roofline]\nflops = \"2*n*k\"\nbytes = 5\n");
  EXPECT_TRUE(HasProblem(names, Line("flops ="), "roofline.flops", "unknown name \"k\""));
  EXPECT_TRUE(Contains(names.message(), "use only axis names: n"));
  EXPECT_TRUE(HasProblem(names, Line("bytes ="), "roofline.bytes", "expected a string"));

  Status negative = Load(kTop + kIn + kOut + kWork + "[roofline]\nbytes = \"n - 100\"\n");
  EXPECT_TRUE(HasProblem(negative, Line("bytes ="), "roofline.bytes", "evaluates to -84 for workload \"small\""));
}

TEST_F(LoaderErrors, Params) {
  Status s = Load(kTop + kIn + kOut + kWork +
                  "[params]\nEMPTY = []\nSCALAR = 64\nFLAG = [true]\nHUGE = [inf]\n\"1X\" = [1]\n"
                  "VEC = [1, 2, 1]\nNAME = [\"\"]\nconstraints = [\"VEC < 4\"]\n");
  EXPECT_TRUE(HasProblem(s, Line("EMPTY"), "params.EMPTY", "no values given"));
  EXPECT_TRUE(HasProblem(s, Line("SCALAR"), "params.SCALAR", "expected an array of values"));
  EXPECT_TRUE(HasProblem(s, Line("FLAG"), "params.FLAG[0]",
                         "expected an integer, finite float or non-empty string, got boolean true"));
  EXPECT_TRUE(HasProblem(s, Line("HUGE"), "params.HUGE[0]", "got float inf"));
  EXPECT_TRUE(HasProblem(s, Line("1X"), "params.1X", "not a C identifier"));
  EXPECT_TRUE(HasProblem(s, Line("VEC = "), "params.VEC[2]", "value 1 is listed twice"));
  EXPECT_TRUE(HasProblem(s, Line("NAME"), "params.NAME[0]", "non-empty string"));
  EXPECT_TRUE(HasProblem(s, Line("constraints"), "params.constraints", "top-level key"));
  EXPECT_EQ(ProblemCount(s), 8) << s.message();
}

TEST_F(LoaderErrors, Constraints) {
  Status s = Load(kTop + "constraints = [\"BLOCK *\", \"BLCK > 1\", \"LAYOUT > 0\", 3]\n" + kIn + kOut + kWork +
                  "[params]\nBLOCK = [64, 128]\nLAYOUT = [\"row\", \"col\"]\n");
  int line = Line("constraints =");
  EXPECT_TRUE(HasProblem(s, line, "constraints[0]", "\"BLOCK *\""));
  EXPECT_TRUE(HasProblem(s, line, "constraints[1]", "unknown name \"BLCK\""));
  EXPECT_TRUE(Contains(s.message(), "use only param names: BLOCK, LAYOUT"));
  EXPECT_TRUE(HasProblem(s, line, "constraints[2]", "\"row\" is not a number"));
  EXPECT_TRUE(HasProblem(s, line, "constraints[3]", "expected a string"));
  EXPECT_EQ(ProblemCount(s), 4) << s.message();

  Status not_array = Load(kTop + "constraints = \"BLOCK > 1\"\n" + kIn + kOut + kWork);
  EXPECT_TRUE(HasProblem(not_array, Line("constraints ="), "constraints", "expected an array of strings"));
}

TEST_F(LoaderErrors, Baselines) {
  Status s = Load(kTop + kIn + kOut + kWork +
                  "[[baselines]]\nname = \"nosrc\"\n\n"
                  "[[baselines]]\nname = \"gone\"\nsource = \"nope.cpp\"\n\n"
                  "[[baselines]]\nname = \"reference\"\nsource = \"baseline.cpp\"\n\n"
                  "[[baselines]]\nname = \"cu\"\nsource = \"reference.cu\"\nsrc = \"x\"\n\n"
                  "[[baselines]]\nsource = \"baseline.cpp\"\n");
  EXPECT_TRUE(HasProblem(s, Line("[[baselines]]", 1), "baselines[0].source", "required field is missing"));
  EXPECT_TRUE(HasProblem(s, Line("nope.cpp"), "baselines[1].source", "file \"nope.cpp\" not found"));
  EXPECT_TRUE(HasProblem(s, Line("name = \"reference\""), "baselines[2].name", "names the task's reference"));
  EXPECT_TRUE(HasProblem(s, Line("source = \"reference.cu\""), "baselines[3].source", "does not end in .cpp"));
  EXPECT_TRUE(HasProblem(s, Line("src = "), "baselines[3].src", "unknown key"));
  EXPECT_TRUE(HasProblem(s, Line("[[baselines]]", 5), "baselines[4].name", "required field is missing"));
  EXPECT_EQ(ProblemCount(s), 6) << s.message();
}

TEST_F(LoaderErrors, EveryProblemIsReportedInLineOrder) {
  Status s = Load("name = \"t\"\nbackend = \"tpu\"\nreference = \"reference.cpp\"\n" +
                  std::string("[[inputs]]\nname = \"x\"\ndtype = \"f31\"\nshape = [\"n\"]\n\n") + kOut +
                  "[[workloads]]\nname = \"small\"\naxes = { n = 0 }\n\n" + "[tolerance]\nrtol = -1.0\n");
  EXPECT_TRUE(HasProblem(s, 2, "backend", "unknown backend"));
  EXPECT_TRUE(HasProblem(s, Line("f31"), "inputs[0].dtype", "unknown dtype"));
  EXPECT_TRUE(HasProblem(s, Line("n = 0"), "workloads[0].axes.n", "positive integer"));
  EXPECT_TRUE(HasProblem(s, Line("rtol"), "tolerance.rtol", "non-negative"));
  EXPECT_EQ(ProblemCount(s), 4) << s.message();
  // Sorted by line.
  int last = 0;
  std::istringstream in(s.message());
  for (std::string l; std::getline(in, l);) {
    int line = std::stoi(l.substr(l.find(':') + 1));
    EXPECT_GE(line, last) << s.message();
    last = line;
  }
}

TEST_F(LoaderErrors, EmptyFileReportsWhatIsMissingAtLineOne) {
  Status s = Load("");
  for (const char* field : {"name", "backend", "reference", "outputs", "workloads"})
    EXPECT_TRUE(HasProblem(s, 1, field, "")) << field;
  EXPECT_EQ(ProblemCount(s), 5) << s.message();
}

TEST(LoaderFixtures, InvalidFixtureReportsItsThreeProblems) {
  auto r = LoadTask(std::filesystem::path(KPILOT_FIXTURES_DIR) / "tasks" / "invalid");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasProblem(r.status(), 8, "inputs[0].dtype", "unknown dtype \"float\""));
  EXPECT_TRUE(HasProblem(r.status(), 18, "workloads[0].axes.n", "must be a positive integer"));
  EXPECT_TRUE(HasProblem(r.status(), 21, "tolerance.matched_ratio", "must be in (0, 1]"));
  EXPECT_EQ(ProblemCount(r.status()), 3) << r.status().message();
}

}  // namespace
}  // namespace kpilot
