// kpilot as an agent's harness: a Model Context Protocol server (docs/mcp.md). An agent CLI
// (Claude Code, Codex, …) starts `kpilot mcp TASK` and calls its tools while it writes a kernel:
// describe_task, evaluate, profile, search_skills/get_skill, search_code/read_file, best_so_far,
// history and finish. Every evaluation goes through the same harness, sandbox and store as
// `kpilot eval`, and becomes a node of a run (AgentRun), so the session reads like a search.
//
// The module's parts:
//   Session     the protocol, transport-free and pure but for the tools it calls: one JSON-RPC
//               2.0 message in, the reply out. Both eras of MCP: the initialize handshake
//               (2024-11-05 … 2025-11-25) and the per-request envelope of 2026-07-28
//               (server/discover, the protocol version in each request's _meta).
//   ServeStream stdio: newline-delimited messages; pings are answered and cancellations recorded
//               while a tool runs; the end of the input (the client went away) ends the session.
//   KpilotTools the tools over kpilot's libraries (tools.cc), with the session's limits.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "optimize/optimizer.h"
#include "skills/skills.h"
#include "task/task.h"

namespace kpilot::mcp {

// The revision of the per-request envelope, and those reached through initialize (oldest first;
// a client asking for another is answered with the newest, as the protocol says).
inline constexpr char kModernVersion[] = "2026-07-28";
const std::vector<std::string>& HandshakeVersions();

// JSON-RPC and MCP error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kUnsupportedVersion = -32022;

// One tool as tools/list describes it. `input_schema` is a JSON Schema object; CheckArguments
// enforces the part of it kpilot's tools use.
struct ToolSpec {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  bool read_only = true;  // annotations.readOnlyHint
};

// What a tool call returns: text for the model (what every client shows it), the same as JSON
// (structuredContent), and whether the call failed in a way the model can correct (isError).
struct ToolResult {
  std::string text;
  nlohmann::json structured;
  bool is_error = false;
};

// What a running tool may ask of its session.
struct CallContext {
  // True once the client cancelled this request or went away.
  std::function<bool()> cancelled = [] { return false; };
  // Reports progress when the client asked for it (a progressToken); a no-op otherwise.
  std::function<void(double done, double total, const std::string& message)> progress = [](double, double,
                                                                                           const std::string&) {};
};

// The tools a server offers. Call's status: InvalidInput becomes the protocol's invalid-params
// error (-32602) with its message (a call the client got wrong: an unknown node, a path outside
// the workspace); any other error becomes a tool result with isError, which the model reads.
class ToolSet {
 public:
  virtual ~ToolSet() = default;
  virtual std::vector<ToolSpec> Tools() const = 0;
  // `client` names the agent as its initialize or _meta said ("" when it did not).
  virtual Result<ToolResult> Call(const std::string& name, const nlohmann::json& arguments, const std::string& client,
                                  const CallContext& ctx) = 0;
};

// Checks `arguments` against `tool`'s input schema: an object; required properties present;
// no property the schema lacks (additionalProperties false); each of type string, integer,
// number, boolean, object or array as declared; strings within maxLength; integers within
// minimum. InvalidInput naming the tool, the argument and what it should be. Pure.
Status CheckArguments(const ToolSpec& tool, const nlohmann::json& arguments);

struct ServerInfo {
  std::string name = "kpilot";
  std::string version;
  std::string instructions;  // sent to the client for the model: how to use the tools
};

// The protocol of one connection, without the transport. Not thread-safe: one thread handles
// messages in order (ServeStream's), the tools running on it.
class Session {
 public:
  // `tools` is borrowed and outlives the session. Messages longer than `max_message_bytes` are
  // refused with an error naming the limit.
  Session(ToolSet& tools, ServerInfo info, size_t max_message_bytes = 8 << 20);

  // One received message: the response to write, or nullopt for a notification (or a response
  // from the client). Never throws: malformed JSON is -32700, a message that is not a request
  // -32600, an unknown method -32601, bad params -32602, each with a message saying what to fix.
  // `notify` writes a notification of this request (progress) while a tool runs.
  std::optional<nlohmann::json> Handle(const std::string& message, const CallContext& ctx,
                                       const std::function<void(const nlohmann::json&)>& notify = {});

  // The client's name (initialize's clientInfo or a request's _meta), "" before it gave one.
  const std::string& client() const { return client_; }
  // The negotiated protocol version ("" before any).
  const std::string& version() const { return version_; }
  // The message Handle is handling or handled last: its id as JSON text and its method ("" when
  // it had none, or could not be read). A transport matches cancellations and times calls by them.
  const std::string& current_id() const { return current_id_; }
  const std::string& current_method() const { return current_method_; }

 private:
  std::optional<nlohmann::json> HandleMessage(const std::string& message, const CallContext& ctx,
                                              const std::function<void(const nlohmann::json&)>& notify);
  nlohmann::json Dispatch(const nlohmann::json& request, const CallContext& ctx,
                          const std::function<void(const nlohmann::json&)>& notify);
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json Discover();
  nlohmann::json ListTools() const;
  nlohmann::json CallTool(const nlohmann::json& params, const CallContext& ctx,
                          const std::function<void(const nlohmann::json&)>& notify);
  nlohmann::json Complete(nlohmann::json result) const;  // the modern era's resultType

  ToolSet& tools_;
  ServerInfo info_;
  size_t max_message_bytes_;
  std::string client_;
  std::string version_;
  std::string current_id_, current_method_;
  bool modern_ = false;
};

// Serves `session` over a pair of file descriptors (stdin and stdout): one JSON-RPC message a
// line each way. A reader thread takes the input: it answers pings at once, marks cancelled
// requests, and queues the rest for this thread, which handles them in order. `on_request` (may be
// empty) is told each request's method and how long it took, for the session's record. Returns
// Ok when the input ends; the request running then is told it is cancelled.
Status ServeStream(Session& session, int in_fd, int out_fd,
                   const std::function<void(const std::string& method, double seconds)>& on_request = {});

// ---- kpilot's tools ----------------------------------------------------------------------------

// What one server session may spend (kpilot mcp's flags; 0 = no limit).
struct ToolLimits {
  int max_evaluations = 50;
  int max_profiles = 20;
  double max_wall_s = 0;              // from the server's start
  size_t max_source_bytes = 1 << 20;  // an evaluate's source
  size_t max_read_bytes = 24 * 1024;  // read_file's slice
};

struct KpilotToolsOptions {
  ToolLimits limits;
  // Where `evaluate`'s `file` arguments are read from (the agent's workspace; the server's
  // working directory by default). Paths may not leave it.
  std::filesystem::path workspace;
  // Trees search_code and read_file may read (CUTLASS/CuTe first), read-only.
  std::vector<std::filesystem::path> code_roots;
  std::string abi_header;       // the text of include/kpilot/kernel.h
  std::string cutlass_include;  // the CUTLASS include folder candidates compile against ("" = none)
  std::string cutlass_version;
  const SkillLibrary* skills = nullptr;  // borrowed; null: search_skills finds nothing
  std::string platform;                  // the target ("sm_90a"; "" for host tasks)
  nlohmann::json context;                // recorded in the run's start event (AgentRun::Origin)
  ParamValues start_params;              // the starting candidate's params
};

// The kpilot tools over one task and one agent run. The run is started at the first call that
// needs it (so it is named after the client), evaluating the starting candidate first when
// `deps`'s options name one.
class KpilotTools : public ToolSet {
 public:
  // All borrowed: `task`, `deps` (executor, store, progress) and `options.skills` outlive this.
  KpilotTools(const Task& task, const AgentDeps& deps, OptimizeOptions run_options, KpilotToolsOptions options);
  ~KpilotTools() override;

  std::vector<ToolSpec> Tools() const override;
  Result<ToolResult> Call(const std::string& name, const nlohmann::json& arguments, const std::string& client,
                          const CallContext& ctx) override;

  // The session's run (0 before one was started).
  int64_t run_id() const;
  // Ends the session: the run is recorded interrupted (the client went away without finish)
  // unless finish was called.
  void Close(const std::string& reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kpilot::mcp
