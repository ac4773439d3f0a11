#include "task/formula.h"

#include <gtest/gtest.h>

#include "task_test_util.h"

namespace kpilot {
namespace {

using testing_util::Contains;

TEST(EvaluateFormula, ArithmeticOverVariables) {
  auto v = EvaluateFormula("2*m*n*k + m*n", {{"m", 128}, {"n", 64}, {"k", 32}});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_DOUBLE_EQ(*v, 2.0 * 128 * 64 * 32 + 128 * 64);
}

TEST(EvaluateFormula, ConstantsAndFunctionsNeedNoVariables) {
  auto v = EvaluateFormula("max(3, 4) * 2^10", {});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_DOUBLE_EQ(*v, 4096);
}

TEST(EvaluateFormula, ExtraVariablesAreIgnored) {
  auto v = EvaluateFormula("12*n", {{"n", 10}, {"unused", 1}});
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(*v, 120);
}

TEST(EvaluateFormula, UnknownVariableIsNamed) {
  auto v = EvaluateFormula("2*n*k", {{"n", 4}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(v.status().message(), "unknown variable \"k\""));
  EXPECT_TRUE(Contains(v.status().message(), "2*n*k"));
}

TEST(EvaluateFormula, SyntaxErrorNamesExpressionAndPosition) {
  auto v = EvaluateFormula("2*(n+", {{"n", 1}});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(v.status().message(), "\"2*(n+\""));
  EXPECT_TRUE(Contains(v.status().message(), "position"));
}

TEST(EvaluateFormula, EmptyExpressionIsInvalid) {
  auto v = EvaluateFormula("  ", {});
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "empty"));
}

TEST(FormulaVariables, ListsUsedVariablesOnce) {
  auto vars = FormulaVariables("2*m*n*k + m*n + _pi");
  ASSERT_TRUE(vars.ok()) << vars.status().ToString();
  EXPECT_EQ(*vars, (std::vector<std::string>{"k", "m", "n"}));  // _pi is a constant
}

TEST(FormulaVariables, NoVariables) {
  auto vars = FormulaVariables("1024 * 4");
  ASSERT_TRUE(vars.ok());
  EXPECT_TRUE(vars->empty());
}

TEST(FormulaVariables, SyntaxError) {
  auto vars = FormulaVariables("n * * 2");
  ASSERT_FALSE(vars.ok());
  EXPECT_EQ(vars.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(vars.status().message(), "n * * 2"));
}

TEST(ConstraintsHold, EveryConstraintMustHold) {
  std::vector<std::string> c = {"BLOCK * VEC <= 2048", "BLOCK % 32 == 0"};
  auto ok = ConstraintsHold(c, {{"BLOCK", "256"}, {"VEC", "4"}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(*ok);
  auto too_big = ConstraintsHold(c, {{"BLOCK", "1024"}, {"VEC", "4"}});
  ASSERT_TRUE(too_big.ok());
  EXPECT_FALSE(*too_big);
  auto misaligned = ConstraintsHold(c, {{"BLOCK", "48"}, {"VEC", "1"}});
  ASSERT_TRUE(misaligned.ok());
  EXPECT_FALSE(*misaligned);
}

TEST(ConstraintsHold, LogicalOperatorsAndFloats) {
  std::vector<std::string> c = {"(TILE == 16 || TILE == 32) && SCALE < 1.5"};
  EXPECT_TRUE(*ConstraintsHold(c, {{"TILE", "32"}, {"SCALE", "0.5"}}));
  EXPECT_FALSE(*ConstraintsHold(c, {{"TILE", "64"}, {"SCALE", "0.5"}}));
  EXPECT_FALSE(*ConstraintsHold(c, {{"TILE", "16"}, {"SCALE", "2.0"}}));
}

TEST(ConstraintsHold, NoConstraintsAlwaysHold) {
  auto ok = ConstraintsHold({}, {{"LAYOUT", "row"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(*ok);
}

TEST(ConstraintsHold, NonNumericValueUsedIsInvalid) {
  auto r = ConstraintsHold({"BLOCK >= 64"}, {{"BLOCK", "big"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(r.status().message(), "BLOCK"));
  EXPECT_TRUE(Contains(r.status().message(), "not a number"));
}

TEST(ConstraintsHold, NonNumericValueNotUsedIsFine) {
  auto r = ConstraintsHold({"BLOCK >= 64"}, {{"BLOCK", "128"}, {"LAYOUT", "row"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
}

TEST(ConstraintsHold, UnknownParameterIsInvalid) {
  auto r = ConstraintsHold({"BLCK >= 64"}, {{"BLOCK", "128"}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "unknown parameter \"BLCK\""));
}

TEST(ConstraintsHold, SyntaxErrorIsInvalid) {
  auto r = ConstraintsHold({"BLOCK >="}, {{"BLOCK", "128"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace kpilot
