// The MCP protocol without a transport (mcp.h, Session): JSON-RPC 2.0 framing and errors, the
// two eras' negotiation, tools/list and tools/call with their arguments checked.
#include <algorithm>

#include <fmt/format.h>

#include "mcp/mcp.h"

namespace kpilot::mcp {

using nlohmann::json;

namespace {

constexpr char kVersionMetaKey[] = "io.modelcontextprotocol/protocolVersion";
constexpr char kClientInfoMetaKey[] = "io.modelcontextprotocol/clientInfo";
constexpr char kServerInfoMetaKey[] = "io.modelcontextprotocol/serverInfo";

json Error(const json& id, int code, const std::string& message, const json& data = nullptr) {
  json e = {{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", e}};
}

// A string field of an object, or `otherwise` when it is absent or not a string.
std::string StringField(const json& object, const char* key, const std::string& otherwise = "") {
  return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>()
                                                                               : otherwise;
}

json Reply(const json& id, json result) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; }

std::string TypeOf(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

bool HasType(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer() || v.is_number_unsigned();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return true;
}

std::vector<std::string> AllVersions() {
  std::vector<std::string> v = HandshakeVersions();
  v.push_back(kModernVersion);
  return v;
}

}  // namespace

const std::vector<std::string>& HandshakeVersions() {
  static const std::vector<std::string> v = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
  return v;
}

Status CheckArguments(const ToolSpec& tool, const json& arguments) {
  if (!arguments.is_object())
    return Status::InvalidInput(fmt::format("{}: arguments must be an object, got {}", tool.name, TypeOf(arguments)));
  const json& props = tool.input_schema.value("properties", json::object());
  for (const auto& r : tool.input_schema.value("required", json::array()))
    if (!arguments.contains(r.get<std::string>()))
      return Status::InvalidInput(
          fmt::format("{}: missing required argument `{}` ({})", tool.name, r.get<std::string>(),
                      props.value(r.get<std::string>(), json::object()).value("description", "")));
  for (const auto& [name, value] : arguments.items()) {
    if (!props.contains(name)) {
      std::string known;
      for (const auto& [k, v] : props.items()) known += (known.empty() ? "" : ", ") + k;
      return Status::InvalidInput(fmt::format("{}: unknown argument `{}` (its arguments: {})", tool.name, name,
                                              known.empty() ? "none" : known));
    }
    const json& p = props.at(name);
    const std::string type = p.value("type", "");
    if (!type.empty() && !HasType(value, type))
      return Status::InvalidInput(fmt::format("{}: argument `{}` must be {}{}, got {}", tool.name, name,
                                              type == "integer" || type == "array" || type == "object" ? "an " : "a ",
                                              type, TypeOf(value)));
    if (value.is_string() && p.contains("maxLength") && value.get_ref<const std::string&>().size() > p["maxLength"])
      return Status::InvalidInput(fmt::format("{}: argument `{}` is {} bytes; the limit is {}", tool.name, name,
                                              value.get_ref<const std::string&>().size(),
                                              p["maxLength"].get<size_t>()));
    if (value.is_number() && p.contains("minimum") && value.get<double>() < p["minimum"].get<double>())
      return Status::InvalidInput(
          fmt::format("{}: argument `{}` must be at least {}", tool.name, name, p["minimum"].dump()));
    if (value.is_object() && p.contains("additionalProperties") && p["additionalProperties"].is_object()) {
      const std::string vt = p["additionalProperties"].value("type", "");
      for (const auto& [k, v] : value.items())
        if (!vt.empty() && !HasType(v, vt))
          return Status::InvalidInput(
              fmt::format("{}: `{}.{}` must be a {}, got {}", tool.name, name, k, vt, TypeOf(v)));
    }
  }
  return Status::Ok();
}

Session::Session(ToolSet& tools, ServerInfo info, size_t max_message_bytes)
    : tools_(tools), info_(std::move(info)), max_message_bytes_(max_message_bytes) {}

std::optional<json> Session::Handle(const std::string& message, const CallContext& ctx,
                                    const std::function<void(const json&)>& notify) {
  try {
    return HandleMessage(message, ctx, notify);
  } catch (const std::exception& e) {  // a shape of message the checks below did not foresee
    return Error(nullptr, kInvalidRequest, std::string("the message could not be read: ") + e.what());
  }
}

std::optional<json> Session::HandleMessage(const std::string& message, const CallContext& ctx,
                                           const std::function<void(const json&)>& notify) {
  current_id_.clear();
  current_method_.clear();
  if (message.size() > max_message_bytes_)
    return Error(nullptr, kInvalidRequest,
                 fmt::format("message of {} bytes refused: the limit is {} (send a source file's path in `file` "
                             "instead of its text)",
                             message.size(), max_message_bytes_));
  json request = json::parse(message, nullptr, false);
  if (request.is_object()) {
    if (request.contains("id")) current_id_ = request["id"].dump();
    current_method_ = StringField(request, "method");
  }
  if (request.is_discarded())
    return Error(nullptr, kParseError, "not JSON: each line must hold one JSON-RPC 2.0 message");
  if (request.is_array())
    return Error(nullptr, kInvalidRequest, "JSON-RPC batches are not part of MCP: send one message per line");
  if (!request.is_object() || !request.contains("jsonrpc") || request["jsonrpc"] != "2.0")
    return Error(request.is_object() && request.contains("id") ? request["id"] : json(), kInvalidRequest,
                 "not a JSON-RPC 2.0 message: it needs \"jsonrpc\": \"2.0\"");
  const bool has_id = request.contains("id");
  if (has_id && !request["id"].is_string() && !request["id"].is_number_integer())
    return Error(nullptr, kInvalidRequest, "the id must be a string or an integer");
  if (!request.contains("method")) {
    if (has_id && (request.contains("result") || request.contains("error"))) return std::nullopt;  // a response
    return Error(has_id ? request["id"] : json(), kInvalidRequest, "a request needs a \"method\"");
  }
  if (!request["method"].is_string())
    return Error(has_id ? request["id"] : json(), kInvalidRequest, "\"method\" must be a string");
  if (!has_id) return std::nullopt;  // notifications: initialized, cancelled (ServeStream), progress, …
  if (request.contains("params") && !request["params"].is_object())
    return Error(request["id"], kInvalidParams, "\"params\" must be an object");
  if (request.contains("params") && request["params"].contains("_meta") && !request["params"]["_meta"].is_object())
    return Error(request["id"], kInvalidParams, "\"params._meta\" must be an object");
  try {
    return Dispatch(request, ctx, notify);
  } catch (const std::exception& e) {
    return Error(request["id"], kInternalError, std::string("internal error of kpilot's: ") + e.what());
  }
}

json Session::Dispatch(const json& request, const CallContext& ctx, const std::function<void(const json&)>& notify) {
  const json& id = request["id"];
  const std::string method = request["method"];
  const json params = request.value("params", json::object());
  // The per-request envelope: the version and the client in _meta.
  const json meta = params.value("_meta", json::object());
  if (meta.contains(kVersionMetaKey) && method != "initialize") {
    const json& v = meta[kVersionMetaKey];
    if (!v.is_string() || v.get<std::string>() != kModernVersion)
      return Error(id, kUnsupportedVersion, fmt::format("protocol version {} is not supported by kpilot", v.dump()),
                   {{"supported", AllVersions()}, {"requested", v}});
    modern_ = true;
    version_ = kModernVersion;
    if (meta.contains(kClientInfoMetaKey) && meta[kClientInfoMetaKey].is_object())
      client_ = StringField(meta[kClientInfoMetaKey], "name", client_);
  }
  if (method == "initialize") return Reply(id, Initialize(params));
  if (method == "server/discover") return Reply(id, Discover());
  if (method == "ping") return Reply(id, Complete(json::object()));
  if (method == "tools/list") return Reply(id, ListTools());
  if (method == "tools/call") return CallTool(request, ctx, notify);
  if (method == "logging/setLevel") return Reply(id, Complete(json::object()));
  return Error(id, kMethodNotFound,
               "method " + method + " is not served: kpilot offers tools only (tools/list, tools/call)");
}

json Session::Initialize(const json& params) {
  const std::string asked = StringField(params, "protocolVersion");
  const auto& known = HandshakeVersions();
  version_ = std::find(known.begin(), known.end(), asked) != known.end() ? asked : known.back();
  modern_ = false;
  if (params.contains("clientInfo") && params["clientInfo"].is_object())
    client_ = StringField(params["clientInfo"], "name");
  json r = {{"protocolVersion", version_},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"serverInfo", {{"name", info_.name}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) r["instructions"] = info_.instructions;
  return r;
}

json Session::Discover() {
  json r = {{"supportedVersions", AllVersions()},
            {"capabilities", {{"tools", {{"listChanged", false}}}}},
            {"cacheScope", "private"},
            {"ttlMs", 0},
            {"resultType", "complete"},
            {"_meta", {{kServerInfoMetaKey, {{"name", info_.name}, {"version", info_.version}}}}}};
  if (!info_.instructions.empty()) r["instructions"] = info_.instructions;
  return r;
}

json Session::Complete(json result) const {
  if (modern_) result["resultType"] = "complete";
  return result;
}

json Session::ListTools() const {
  json list = json::array();
  for (const auto& t : tools_.Tools()) {
    json j = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (!t.title.empty()) j["title"] = t.title;
    j["annotations"] = {{"readOnlyHint", t.read_only}, {"openWorldHint", false}};
    list.push_back(j);
  }
  json r = {{"tools", list}};
  if (modern_) {
    r["cacheScope"] = "private";
    r["ttlMs"] = 0;
  }
  return Complete(r);
}

json Session::CallTool(const json& request, const CallContext& ctx, const std::function<void(const json&)>& notify) {
  const json& id = request["id"];
  const json params = request.value("params", json::object());
  if (!params.contains("name") || !params["name"].is_string())
    return Error(id, kInvalidParams, "tools/call needs params.name, the tool's name (see tools/list)");
  const std::string name = params["name"];
  const json arguments = params.value("arguments", json::object());
  const auto tools = tools_.Tools();
  auto it = std::find_if(tools.begin(), tools.end(), [&](const ToolSpec& t) { return t.name == name; });
  if (it == tools.end()) {
    std::string known;
    for (const auto& t : tools) known += (known.empty() ? "" : ", ") + t.name;
    return Error(id, kInvalidParams, "unknown tool: " + name + " (kpilot's tools: " + known + ")");
  }
  if (Status s = CheckArguments(*it, arguments); !s.ok()) return Error(id, kInvalidParams, s.message());
  CallContext call = ctx;
  const json meta = params.value("_meta", json::object());
  if (meta.contains("progressToken") && notify) {
    const json token = meta["progressToken"];
    call.progress = [notify, token](double done, double total, const std::string& message) {
      json p = {{"progressToken", token}, {"progress", done}};
      if (total > 0) p["total"] = total;
      if (!message.empty()) p["message"] = message;
      notify({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", p}});
    };
  }
  auto result = tools_.Call(name, arguments, client_, call);
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kInvalidInput)
      return Error(id, kInvalidParams, name + ": " + result.status().message());
    json r = {{"content", json::array({{{"type", "text"}, {"text", result.status().ToString()}}})}, {"isError", true}};
    return Reply(id, Complete(r));
  }
  json r = {{"content", json::array({{{"type", "text"}, {"text", result->text}}})}, {"isError", result->is_error}};
  if (!result->structured.is_null()) r["structuredContent"] = result->structured;
  return Reply(id, Complete(r));
}

}  // namespace kpilot::mcp
