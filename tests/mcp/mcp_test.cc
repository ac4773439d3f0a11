// The MCP protocol without a transport (mcp::Session) over a scripted tool set, and the argument
// checker: negotiation in both eras, errors for every kind of bad message, tool results and
// progress notifications.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "mcp/mcp.h"

namespace kpilot::mcp {
namespace {

using nlohmann::json;

// One tool, `echo {text, n?}`: answers the text; "bad" is the caller's mistake (InvalidInput),
// "fail" kpilot's (a tool error the model reads), "slow" reports progress.
class EchoTools : public ToolSet {
 public:
  std::vector<ToolSpec> Tools() const override {
    return {{"echo",
             "Echo",
             "Says the text back",
             {{"type", "object"},
              {"properties",
               {{"text", {{"type", "string"}, {"maxLength", 16}}}, {"n", {{"type", "integer"}, {"minimum", 1}}}}},
              {"required", {"text"}},
              {"additionalProperties", false}}}};
  }
  Result<ToolResult> Call(const std::string& name, const json& a, const std::string& client,
                          const CallContext& ctx) override {
    last_client = client;
    const std::string text = a.at("text");
    if (text == "bad") return Status::InvalidInput("text must not be bad");
    if (text == "fail") return Status::Unavailable("the GPU went away");
    if (text == "slow") ctx.progress(1, 2, "half");
    return ToolResult{name + ": " + text, {{"text", text}}, false};
  }
  std::string last_client;
};

json Request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

class SessionTest : public ::testing::Test {
 protected:
  json Send(const json& message) { return Raw(message.dump()); }
  json Raw(const std::string& line) {
    auto r = session.Handle(line, CallContext{}, [&](const json& n) { notes.push_back(n); });
    return r ? *r : json();
  }
  json Call(const json& arguments, json meta = nullptr) {
    json params = {{"name", "echo"}, {"arguments", arguments}};
    if (!meta.is_null()) params["_meta"] = meta;
    return Send(Request(9, "tools/call", params));
  }

  EchoTools tools;
  Session session{tools, ServerInfo{"kpilot", "1.0", "use the tools"}, 1024};
  std::vector<json> notes;
};

TEST_F(SessionTest, InitializeNegotiatesAHandshakeVersion) {
  json r =
      Send(Request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"clientInfo", {{"name", "claude-code"}}}}));
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(r["result"]["instructions"], "use the tools");
  EXPECT_EQ(session.client(), "claude-code");
  // A version kpilot does not know is answered with its newest of that era.
  r = Send(Request(2, "initialize", {{"protocolVersion", "2099-01-01"}}));
  EXPECT_EQ(r["result"]["protocolVersion"], HandshakeVersions().back());
  EXPECT_FALSE(r["result"].contains("resultType"));
}

TEST_F(SessionTest, TheModernEnvelope) {
  json d = Send(Request(1, "server/discover"));
  EXPECT_EQ(d["result"]["resultType"], "complete");
  auto versions = d["result"]["supportedVersions"].get<std::vector<std::string>>();
  EXPECT_EQ(versions.back(), kModernVersion);
  json meta = {{"io.modelcontextprotocol/protocolVersion", kModernVersion},
               {"io.modelcontextprotocol/clientInfo", {{"name", "codex"}}}};
  json list = Send(Request(2, "tools/list", {{"_meta", meta}}));
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["cacheScope"], "private");
  EXPECT_EQ(list["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ(session.version(), kModernVersion);
  EXPECT_EQ(session.client(), "codex");
  json r = Call({{"text", "hi"}}, meta);
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(tools.last_client, "codex");
  // A request at a version kpilot does not speak names those it does.
  json bad = Send(Request(3, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2030-01-01"}}}}));
  EXPECT_EQ(bad["error"]["code"], kUnsupportedVersion);
  EXPECT_EQ(bad["error"]["data"]["supported"].back(), kModernVersion);
}

TEST_F(SessionTest, MalformedMessages) {
  EXPECT_EQ(Raw("{oops")["error"]["code"], kParseError);
  EXPECT_TRUE(Raw("{oops")["id"].is_null());
  EXPECT_EQ(Raw("[1, 2]")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Send({{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}})["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Send({{"jsonrpc", "2.0"}, {"id", 1}})["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Send({{"jsonrpc", "2.0"}, {"id", json::array()}, {"method", "ping"}})["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", 5}})["error"]["code"], kInvalidRequest);
  EXPECT_EQ(Send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}, {"params", 3}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Send(Request(1, "resources/list"))["error"]["code"], kMethodNotFound);
  EXPECT_EQ(Raw(std::string(2000, ' '))["error"]["code"], kInvalidRequest);  // over the 1024-byte limit
  // Notifications and responses get no reply.
  EXPECT_TRUE(Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).is_null());
  EXPECT_TRUE(Send({{"jsonrpc", "2.0"}, {"id", 4}, {"result", json::object()}}).is_null());
  EXPECT_TRUE(Send(Request(5, "ping"))["result"].is_object());
}

TEST_F(SessionTest, ToolCalls) {
  json ok = Call({{"text", "hi"}});
  EXPECT_EQ(ok["result"]["content"][0]["text"], "echo: hi");
  EXPECT_EQ(ok["result"]["structuredContent"]["text"], "hi");
  EXPECT_FALSE(ok["result"]["isError"]);
  // Mistakes of the caller are the protocol's invalid-params error, with what to fix.
  json unknown = Send(Request(2, "tools/call", {{"name", "nope"}, {"arguments", json::object()}}));
  EXPECT_EQ(unknown["error"]["code"], kInvalidParams);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("kpilot's tools: echo"), std::string::npos);
  EXPECT_EQ(Send(Request(3, "tools/call", {{"arguments", json::object()}}))["error"]["code"], kInvalidParams);
  json typed = Call({{"text", 3}});
  EXPECT_EQ(typed["error"]["message"], "echo: argument `text` must be a string, got an integer");
  EXPECT_EQ(Call({{"text", "x"}, {"extra", 1}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(json::object())["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call({{"text", "bad"}})["error"]["message"], "echo: text must not be bad");
  // kpilot's own failures are results the model reads.
  json failed = Call({{"text", "fail"}});
  EXPECT_TRUE(failed["result"]["isError"]);
  EXPECT_NE(failed["result"]["content"][0]["text"].get<std::string>().find("the GPU went away"), std::string::npos);
}

TEST_F(SessionTest, ProgressOnlyWhenAskedFor) {
  Call({{"text", "slow"}});
  EXPECT_TRUE(notes.empty());
  Call({{"text", "slow"}}, {{"progressToken", "t1"}});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["method"], "notifications/progress");
  EXPECT_EQ(notes[0]["params"]["progressToken"], "t1");
  EXPECT_EQ(notes[0]["params"]["progress"], 1);
  EXPECT_EQ(notes[0]["params"]["total"], 2);
}

TEST(CheckArguments, Bounds) {
  EchoTools t;
  const ToolSpec spec = t.Tools()[0];
  EXPECT_TRUE(CheckArguments(spec, {{"text", "ok"}, {"n", 2}}).ok());
  EXPECT_EQ(CheckArguments(spec, json::array()).message(), "echo: arguments must be an object, got an array");
  EXPECT_NE(CheckArguments(spec, {{"text", std::string(17, 'x')}}).message().find("the limit is 16"),
            std::string::npos);
  EXPECT_NE(CheckArguments(spec, {{"text", "x"}, {"n", 0}}).message().find("at least 1"), std::string::npos);
  EXPECT_NE(CheckArguments(spec, {{"text", "x"}, {"n", 1.5}}).message().find("must be an integer"), std::string::npos);
}

// ServeStream over pipes: lines of every bad shape reach the session (or the reader's quick look)
// without ending the server; pings are answered; the end of the input ends it.
TEST(ServeStream, SurvivesEveryMalformedLineAndEndsWithItsInput) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  EchoTools tools;
  Session session(tools, ServerInfo{});
  std::thread server([&] { EXPECT_TRUE(ServeStream(session, in[0], out[1]).ok()); });
  const std::string lines =
      "{\"jsonrpc\":2,\"id\":1,\"method\":\"ping\"}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":[]}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"_meta\":5}}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":7}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":3,"
      "\"clientInfo\":{\"name\":[]}}}\n"
      "\xff\xfe not even text\n"
      "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
  ASSERT_EQ(write(in[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  close(in[1]);
  server.join();
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(in[0]);
  close(out[0]);
  std::map<std::string, json> by_id;
  int lines_out = 0;
  for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    json m = json::parse(text.substr(start, nl - start));
    by_id[m["id"].dump()] = m;
    ++lines_out;
  }
  EXPECT_EQ(lines_out, 6) << text;  // every request answered once; the notification not at all
  EXPECT_EQ(by_id["1"]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(by_id["2"]["error"]["code"], kInvalidParams);
  EXPECT_EQ(by_id["3"]["error"]["code"], kInvalidParams);
  EXPECT_EQ(by_id["4"]["result"]["protocolVersion"], HandshakeVersions().back());
  EXPECT_EQ(by_id["null"]["error"]["code"], kParseError);
  EXPECT_TRUE(by_id["5"]["result"].is_object());
}

}  // namespace
}  // namespace kpilot::mcp
