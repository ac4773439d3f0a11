// The real curl transport against the real local server, without the client above it.
#include <gtest/gtest.h>

#include "fake_llm_server.h"
#include "llm/llm.h"

namespace kpilot::llm {
namespace {

using testing::FakeLlmServer;
using testing::FakeReply;

HttpRequest PostTo(const std::string& url) {
  HttpRequest request;
  request.url = url;
  request.headers = {{"Content-Type", "application/json"}, {"X-Custom", "value 1"}};
  request.body = R"({"model":"m","messages":[]})";
  request.connect_timeout_s = 2;
  request.read_timeout_s = 5;
  return request;
}

TEST(CurlTransport, ReturnsStatusBodyAndLowerCasedHeadersOfAnyStatus) {
  FakeLlmServer server;
  FakeReply reply = FakeReply::Error(503, "busy").WithRetryAfter(2);
  reply.headers.emplace_back("X-Request-ID", "req-42");
  server.Push(std::move(reply));
  Result<HttpResponse> response = MakeCurlTransport()->Post(PostTo(server.BaseUrl() + "/chat/completions"));
  ASSERT_TRUE(response.ok()) << response.status().message();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->headers["retry-after"], "2");
  EXPECT_EQ(response->headers["x-request-id"], "req-42");
  EXPECT_NE(response->body.find("busy"), std::string::npos) << response->body;

  auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].headers["x-custom"], "value 1");
  EXPECT_EQ(requests[0].body, R"({"model":"m","messages":[]})");
  EXPECT_EQ(requests[0].headers.count("expect"), 0u);
}

TEST(CurlTransport, ARefusedConnectionIsUnavailable) {
  FakeLlmServer server;
  std::string url = server.BaseUrl() + "/messages";
  server.Stop();
  Result<HttpResponse> response = MakeCurlTransport()->Post(PostTo(url));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(response.status().message().find(url), std::string::npos) << response.status().message();
}

}  // namespace
}  // namespace kpilot::llm
