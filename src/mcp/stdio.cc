// The stdio transport (mcp.h, ServeStream): newline-delimited JSON-RPC messages on a pair of file
// descriptors, a reader thread that answers pings and takes cancellations while a tool runs.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "mcp/mcp.h"

namespace kpilot::mcp {

using nlohmann::json;

namespace {

class Channel {
 public:
  explicit Channel(int out_fd) : out_fd_(out_fd) {}

  // Writes one message and a newline; false once the other end is gone.
  bool Write(const json& message) {
    std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> l(write_mu_);
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = ::write(out_fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void Push(std::string line) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(line));
    cv_.notify_one();
  }
  void Close() {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  bool closed() {
    std::lock_guard<std::mutex> l(mu_);
    return closed_;
  }
  // The next message, or nullopt once the input has ended and everything queued is taken.
  std::optional<std::string> Pop() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return std::nullopt;
    std::string s = std::move(queue_.front());
    queue_.pop_front();
    return s;
  }
  void Cancel(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_.insert(id);
  }
  bool Cancelled(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    return closed_ || cancelled_.count(id) > 0;
  }

 private:
  int out_fd_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> cancelled_;
  bool closed_ = false;
};

constexpr size_t kQuickLookBytes = 4096;

// What the reader thread takes itself: a ping, answered at once (so a client's keep-alive is
// answered while a long evaluation runs), and a cancellation, recorded for the running call. True
// when `line` was one of those.
bool Intercept(const std::string& line, Channel& channel) {
  json m = json::parse(line, nullptr, false);
  // Anything not plainly a well-formed ping or cancellation goes to the session, which answers
  // what is wrong with it.
  if (!m.is_object() || !m.contains("jsonrpc") || m["jsonrpc"] != "2.0" || !m.contains("method") ||
      !m["method"].is_string())
    return false;
  const std::string method = m["method"];
  const json params = m.contains("params") && m["params"].is_object() ? m["params"] : json::object();
  if (m.contains("params") && !m["params"].is_object()) return false;
  if (params.contains("_meta") && !params["_meta"].is_object()) return false;
  if (method == "ping" && m.contains("id") && (m["id"].is_string() || m["id"].is_number_integer())) {
    json result = json::object();
    if (params.contains("_meta") && params["_meta"].is_object() &&
        params["_meta"].contains("io.modelcontextprotocol/protocolVersion"))
      result["resultType"] = "complete";
    channel.Write({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", result}});
    return true;
  }
  if (method == "notifications/cancelled" && !m.contains("id")) {
    if (params.contains("requestId")) channel.Cancel(params["requestId"].dump());
    return true;
  }
  return false;
}

void ReadLines(int in_fd, Channel& channel) {
  std::string pending;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      std::string line = pending.substr(start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      bool taken = false;
      try {
        // Pings and cancellations are short: a long line (a source) is not parsed twice.
        taken = line.size() <= kQuickLookBytes && Intercept(line, channel);
      } catch (const std::exception&) {
        // A message that breaks the quick look is the session's to answer.
      }
      if (!taken) channel.Push(std::move(line));
    }
    pending.erase(0, start);
  }
  if (pending.find_first_not_of(" \t\r\n") != std::string::npos) channel.Push(pending);  // no final newline
  channel.Close();
}

}  // namespace

Status ServeStream(Session& session, int in_fd, int out_fd,
                   const std::function<void(const std::string& method, double seconds)>& on_request) {
  Channel channel(out_fd);
  std::thread reader([&] { ReadLines(in_fd, channel); });
  bool writable = true;
  while (auto line = channel.Pop()) {
    // The session parses the message once; its id is known by the time a tool asks.
    CallContext ctx;
    ctx.cancelled = [&channel, &session] { return channel.Cancelled(session.current_id()); };
    const auto t0 = std::chrono::steady_clock::now();
    auto reply = session.Handle(*line, ctx, [&](const json& n) { writable = writable && channel.Write(n); });
    const std::string id = session.current_id(), method = session.current_method();
    if (on_request && !method.empty())
      on_request(method, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // A request the client cancelled gets no response (the protocol asks none).
    if (reply && writable && !(id.size() && channel.Cancelled(id) && !channel.closed()))
      writable = channel.Write(*reply);
  }
  reader.join();
  return Status::Ok();
}

}  // namespace kpilot::mcp
