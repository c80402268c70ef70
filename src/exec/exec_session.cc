#include "exec/exec_session.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <map>

#include "obs/log.h"

namespace isolane {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;

class ExecSession : public ExecDaemon::Closable, public std::enable_shared_from_this<ExecSession> {
 public:
  ExecSession(std::shared_ptr<ExecDaemon::Shared> shared, beast::tcp_stream stream)
      : shared_(std::move(shared)),
        ws_(std::move(stream)),
        messageTimer_(ws_.get_executor()),
        inCharge_(ByteCharge::take(shared_->buffers, 0)),
        outCharge_(ByteCharge::take(shared_->buffers, 0)) {
    ++shared_->connections;
  }
  ~ExecSession() { --shared_->connections; }

  void closeSoon() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->closed();
      beast::error_code ec;
      beast::get_lowest_layer(self->ws_).socket().close(ec);
    });
  }

  void start(beast::http::request<beast::http::string_body> upgrade) {
    ws_.read_message_max(shared_->options.maxBodyBytes);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.async_accept(upgrade, [self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->read();
    });
  }

 private:
  // An execution of this socket, by the caller's id (its JSON text).
  struct Running {
    nlohmann::json id;
    std::uint64_t execution = 0;                // the pool's id
    std::map<std::uint64_t, ToolAnswer> calls;  // tool calls waiting for the caller
  };

  // Reads a message a piece at a time: its bytes are charged to the buffers' budget as they
  // come, and it must be whole within messageTimeout of its first byte.
  void read() {
    ws_.async_read_some(
        buffer_, kReadPiece,
        [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->onRead(ec, n); });
  }

  void onRead(beast::error_code ec, std::size_t n) {
    if (ec) {
      messageTimer_.cancel();
      closed();
      return;
    }
    if (!inMessage_ && (n > 0 || !ws_.is_message_done())) {
      inMessage_ = true;
      messageTimer_.expires_after(shared_->options.messageTimeout);
      messageTimer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || !self->inMessage_) return;
        logEvent(Level::kWarn, "executor session closed: a message did not arrive whole in time",
                 {{"timeout_ms", self->shared_->options.messageTimeout.count()}});
        self->abort(websocket::close_code::policy_error, "a message took too long to arrive");
      });
    }
    if (!inCharge_.resize(buffer_.size())) {
      logEvent(Level::kWarn,
               "executor session closed: its message does not fit in max_buffered_mb");
      return abort(websocket::close_code::try_again_later, "the executor holds too much now");
    }
    if (!ws_.is_message_done()) return read();
    inMessage_ = false;
    messageTimer_.cancel();
    std::string text = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    inCharge_.resize(0);
    onMessage(text);
    read();
  }

  // Ends the socket at once with `code` (its executions are cancelled). Once: a second reason
  // (the deadline after the budget) finds it closing.
  void abort(websocket::close_code code, const char* reason) {
    if (aborted_) return;
    aborted_ = true;
    inMessage_ = false;
    messageTimer_.cancel();
    closed();
    ws_.async_close(websocket::close_reason(code, reason),
                    [self = shared_from_this()](beast::error_code) {
                      beast::error_code ignored;
                      beast::get_lowest_layer(self->ws_).socket().close(ignored);
                    });
  }

  void onMessage(const std::string& text) {
    if (!jsonDepthWithin(text, kMaxMessageDepth)) {
      return refuse(nullptr, "a message may nest at most " + std::to_string(kMaxMessageDepth) +
                                 " levels deep");
    }
    nlohmann::ordered_json m = nlohmann::ordered_json::parse(text, nullptr, false);
    if (m.is_discarded() || !m.is_object())
      return refuse(nullptr, "a message must be a JSON object");
    nlohmann::json id = m.contains("id") ? nlohmann::json(m["id"]) : nlohmann::json();
    if (!id.is_string() && !id.is_number_integer()) {
      return refuse(nullptr, "a message needs an id: a string or an integer naming its execution");
    }
    auto type = m.find("type");
    if (type == m.end() || !type->is_string()) return refuse(id, "a message needs a type");
    if (*type == "execute") return execute(m, id);
    if (*type == "tool_result" || *type == "tool_error")
      return toolAnswer(m, id, *type == "tool_result");
    refuse(id, "unknown message type " + type->dump() +
                   "; a client sends execute, tool_result or tool_error");
  }

  void execute(const nlohmann::ordered_json& m, const nlohmann::json& id) {
    std::string key = id.dump();
    if (running_.count(key))
      return refuse(id, "an execution with this id is running on this socket");
    if (running_.size() >= shared_->options.maxInflightPerSocket) {
      return send(error(id, ExecErrorCode::kQueueOverflow,
                        "this socket runs " + std::to_string(running_.size()) +
                            " executions, its bound; retry when one settles"));
    }
    Result<ExecutionSpec> spec = parseExecution(m, shared_->options.defaults, true);
    if (!spec) return refuse(id, spec.error());
    running_.emplace(key, Running{id, 0, {}});
    std::weak_ptr<ExecSession> weak = weak_from_this();
    ToolDispatch dispatch = [weak, key](const ToolCallRequest& call, ToolAnswer answer) {
      auto self = weak.lock();
      if (!self) return answer(false, "the caller went away");
      net::post(self->ws_.get_executor(), [self, key, call, answer = std::move(answer)]() mutable {
        self->toolCall(key, call, std::move(answer));
      });
    };
    running_.at(key).execution = shared_->pool.execute(
        std::move(spec.value()), std::move(dispatch), [weak, key](ExecutionOutcome o) {
          if (auto self = weak.lock()) {
            net::post(self->ws_.get_executor(),
                      [self, key, o = std::move(o)] { self->settled(key, o); });
          }
        });
  }

  void toolCall(const std::string& key, const ToolCallRequest& call, ToolAnswer answer) {
    auto it = running_.find(key);
    if (it == running_.end() || closed_) return answer(false, "the caller went away");
    std::uint64_t c = nextCall_++;
    it->second.calls.emplace(c, std::move(answer));
    // The arguments crossed from the guest as checked JSON text: spliced in as they are.
    std::string message = "{\"type\":\"tool_call\",\"id\":" + it->second.id.dump() +
                          ",\"call\":" + std::to_string(c) + ",\"provider\":" +
                          nlohmann::json(call.provider).dump(-1, ' ', false, kReplace) +
                          ",\"tool\":" + nlohmann::json(call.tool).dump(-1, ' ', false, kReplace) +
                          ",\"args\":" + call.argsJson + "}";
    send(std::move(message));
  }

  void toolAnswer(const nlohmann::ordered_json& m, const nlohmann::json& id, bool ok) {
    auto it = running_.find(id.dump());
    auto call = m.find("call");
    if (it == running_.end())
      return refuse(id, "no execution with this id is running on this socket");
    if (call == m.end() || !call->is_number_unsigned())
      return refuse(id, "a tool answer needs its call number");
    auto waiting = it->second.calls.find(call->get<std::uint64_t>());
    if (waiting == it->second.calls.end())
      return refuse(id, "no tool call " + call->dump() + " is waiting");
    ToolAnswer answer = std::move(waiting->second);
    it->second.calls.erase(waiting);
    if (ok) {
      auto result = m.find("result");
      answer(true, result == m.end() ? "null" : result->dump(-1, ' ', false, kReplace));
    } else {
      auto message = m.find("message");
      answer(false, message != m.end() && message->is_string() ? message->get<std::string>()
                                                               : "the tool failed");
    }
  }

  void settled(const std::string& key, const ExecutionOutcome& o) {
    auto it = running_.find(key);
    if (it == running_.end()) return;
    nlohmann::json id = it->second.id;
    for (auto& [c, answer] : it->second.calls) answer(false, "the execution ended");
    running_.erase(it);
    send("{\"type\":\"" + std::string(o.ok() ? "result" : "error") + "\",\"id\":" + id.dump() +
         "," + outcomeMembers(o) + "}");
  }

  std::string error(const nlohmann::json& id, ExecErrorCode code, const std::string& message) {
    return nlohmann::json{{"type", "error"}, {"id", id}, {"error", errorObject(code, message)}}
        .dump(-1, ' ', false, kReplace);
  }

  // A message the server cannot take: it names what is wrong; nothing else on the socket changes.
  void refuse(const nlohmann::json& id, const std::string& what) {
    nlohmann::json e = {{"code", "BAD_MESSAGE"}, {"retryable", false}, {"message", what}};
    send(
        nlohmann::json{{"type", "error"}, {"id", id}, {"error", e}}.dump(-1, ' ', false, kReplace));
  }

  void send(std::string message) {
    if (closed_) return;
    backlog_ += message.size();
    if (backlog_ > shared_->options.maxSocketBacklogBytes || !outCharge_.resize(backlog_)) {
      // The client does not read (or every client together holds too much): it goes, rather
      // than the server's memory.
      logEvent(Level::kWarn, "executor session closed: its unsent messages are over their bound",
               {{"bytes", backlog_}});
      closed_ = true;
      beast::get_lowest_layer(ws_).close();
      return;
    }
    outbox_.push_back(std::move(message));
    if (outbox_.size() == 1) write();
  }

  void write() {
    ws_.text(true);
    ws_.async_write(net::buffer(outbox_.front()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->backlog_ -= self->outbox_.front().size();
                      self->outbox_.pop_front();
                      self->outCharge_.resize(self->backlog_);
                      if (ec) {
                        self->closed();
                        return;
                      }
                      if (!self->outbox_.empty()) self->write();
                    });
  }

  void closed() {
    if (closed_ && running_.empty()) return;
    closed_ = true;
    // Nobody will read what its executions produce: they are cancelled, and stop holding room.
    std::vector<std::uint64_t> executions;
    for (auto& [key, r] : running_) {
      for (auto& [c, answer] : r.calls) answer(false, "the caller went away");
      r.calls.clear();
      if (r.execution) executions.push_back(r.execution);
    }
    for (std::uint64_t id : executions) shared_->pool.cancel(id);
  }

  static constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  std::shared_ptr<ExecDaemon::Shared> shared_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::map<std::string, Running> running_;
  std::uint64_t nextCall_ = 1;
  std::deque<std::string> outbox_;
  std::size_t backlog_ = 0;
  bool closed_ = false;
  // The message being read: whether one has begun, its deadline, and the bytes it holds (and
  // those of the outbox) against the daemon's budget.
  static constexpr std::size_t kReadPiece = 64 * 1024;
  bool inMessage_ = false;
  bool aborted_ = false;
  net::steady_timer messageTimer_;
  ByteCharge inCharge_;
  ByteCharge outCharge_;
};

}  // namespace

void runExecSession(std::shared_ptr<ExecDaemon::Shared> shared, boost::beast::tcp_stream stream,
                    boost::beast::http::request<boost::beast::http::string_body> upgrade) {
  auto session = std::make_shared<ExecSession>(shared, std::move(stream));
  shared->track(session);
  session->start(std::move(upgrade));
}

}  // namespace isolane
