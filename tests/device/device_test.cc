// Choosing the GPUs a run evaluates on (--devices, --device): pure, over a listed machine.
#include <gtest/gtest.h>

#include "device/device.h"

namespace kpilot {
namespace {

std::vector<GpuInfo> Machine(std::vector<std::string> names) {
  std::vector<GpuInfo> out;
  for (size_t i = 0; i < names.size(); ++i) {
    GpuInfo g;
    g.index = static_cast<int>(i);
    g.name = names[i];
    out.push_back(g);
  }
  return out;
}

TEST(ChooseDevices, AllIsEveryGpuOfTheFirstOnesModel) {
  auto two = ChooseDevices(Machine({"NVIDIA H200", "NVIDIA H200"}), "all");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<int>{0, 1}));
  auto mixed = ChooseDevices(Machine({"NVIDIA H200", "NVIDIA L4", "NVIDIA H200"}), "all");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, (std::vector<int>{0, 2}));
  auto dflt = ChooseDevices(Machine({"NVIDIA H200"}), "");
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(*dflt, (std::vector<int>{0}));
}

TEST(ChooseDevices, IndicesAreTakenInTheirOrder) {
  auto r = ChooseDevices(Machine({"A", "A", "A", "A"}), "2,0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int>{2, 0}));
}

TEST(ChooseDevices, BadSpecsNameTheVisibleGpus) {
  const auto m = Machine({"NVIDIA H200", "NVIDIA L4"});
  for (const std::string spec : {"2", "0,0", "0,1", "x", "0,", "-1", "1.5"}) {
    auto r = ChooseDevices(m, spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << spec;
    EXPECT_NE(r.status().message().find("--devices " + spec), std::string::npos) << r.status().message();
  }
  EXPECT_NE(ChooseDevices(m, "2").status().message().find("0 (NVIDIA H200), 1 (NVIDIA L4)"), std::string::npos);
  EXPECT_NE(ChooseDevices(m, "0,1").status().message().find("do not compare"), std::string::npos);
  EXPECT_EQ(ChooseDevices({}, "all").status().code(), StatusCode::kUnavailable);
}

class ListedGpus : public GpuProbe {
 public:
  ListedGpus(std::vector<GpuInfo> gpus, std::string why) : gpus_(std::move(gpus)), why_(std::move(why)) {}
  std::vector<GpuInfo> List(std::string* why_none) override {
    if (gpus_.empty()) *why_none = why_;
    return gpus_;
  }

 private:
  std::vector<GpuInfo> gpus_;
  std::string why_;
};

TEST(GpuAtIndex, TheIndexedGpuOrAnErrorSayingWhy) {
  ListedGpus two(Machine({"NVIDIA H200", "NVIDIA H200"}), "");
  auto second = GpuAtIndex(two, 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->index, 1);
  auto third = GpuAtIndex(two, 2);
  EXPECT_EQ(third.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(third.status().message().find("--device 2: this machine has 2 GPU(s)"), std::string::npos);
  EXPECT_EQ(GpuAtIndex(two, -1).status().code(), StatusCode::kInvalidInput);
  ListedGpus none({}, "libcuda.so.1 not found");
  auto r = GpuAtIndex(none, 0);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("libcuda.so.1 not found"), std::string::npos);
}

}  // namespace
}  // namespace kpilot
