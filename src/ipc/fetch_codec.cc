#include "ipc/fetch_codec.h"

namespace isolane {
namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

}  // namespace

Result<std::string> encodeFetchCall(const FetchCall& call, std::size_t max) {
  flatbuffers::FlatBufferBuilder fbb(128 + call.url.size());
  auto action = call.action == FetchCall::Action::kStart  ? wire::FetchAction::Start
                : call.action == FetchCall::Action::kPull ? wire::FetchAction::Pull
                                                          : wire::FetchAction::Abort;
  flatbuffers::Offset<wire::FetchCall> m;
  if (call.action == FetchCall::Action::kStart) {
    m = wire::CreateFetchCall(fbb, call.op, action, fbb.CreateString(call.app),
                              fbb.CreateString(call.method), fbb.CreateString(call.url),
                              wireHeaders(fbb, call.headers), call.timeoutMs);
  } else {
    m = wire::CreateFetchCall(fbb, call.op, action);
  }
  // The body (of a Start) is the trailer.
  std::string_view body = call.action == FetchCall::Action::kStart ? call.body : std::string_view();
  return appendTrailer(finishFrame(fbb, wire::Message::FetchCall, m.Union(), max, body.size()),
                       body);
}

Result<std::string> encodeFetchEvent(const FetchEvent& event, std::size_t max) {
  flatbuffers::FlatBufferBuilder fbb(128);
  wire::FetchEventKind kind = wire::FetchEventKind::Error;
  switch (event.kind) {
    case FetchEvent::Kind::kHead:
      kind = wire::FetchEventKind::Head;
      break;
    case FetchEvent::Kind::kChunk:
      kind = wire::FetchEventKind::Chunk;
      break;
    case FetchEvent::Kind::kEnd:
      kind = wire::FetchEventKind::End;
      break;
    case FetchEvent::Kind::kError:
      break;
  }
  auto status =
      static_cast<std::uint16_t>(event.status < 0 || event.status > 999 ? 0 : event.status);
  auto m = wire::CreateFetchEvent(fbb, event.op, kind, status, fbb.CreateString(event.statusText),
                                  wireHeaders(fbb, event.headers), fbb.CreateString(event.errorKind));
  // A piece of the body (of a Chunk) is the trailer.
  return appendTrailer(
      finishFrame(fbb, wire::Message::FetchEvent, m.Union(), max, event.data.size()), event.data);
}

Result<FetchCall> decodeFetchCall(const wire::FetchCall& m, std::string_view trailer) {
  if (m.action() != wire::FetchAction::Start && !trailer.empty()) {
    return Error{"a body on a FetchCall that starts nothing"};
  }
  FetchCall call;
  call.op = m.op();
  switch (m.action()) {
    case wire::FetchAction::Start:
      call.action = FetchCall::Action::kStart;
      break;
    case wire::FetchAction::Pull:
      call.action = FetchCall::Action::kPull;
      break;
    default:
      call.action = FetchCall::Action::kAbort;
      break;
  }
  call.app = str(m.app());
  call.method = str(m.method());
  call.url = str(m.url());
  call.headers = headersFrom(m.headers());
  call.body.assign(trailer);
  call.timeoutMs = m.timeout_ms();
  return call;
}

FetchEvent decodeFetchEvent(const wire::FetchEvent& m, std::string_view trailer) {
  FetchEvent event;
  event.op = m.op();
  switch (m.kind()) {
    case wire::FetchEventKind::Head:
      event.kind = FetchEvent::Kind::kHead;
      break;
    case wire::FetchEventKind::Chunk:
      event.kind = FetchEvent::Kind::kChunk;
      break;
    case wire::FetchEventKind::End:
      event.kind = FetchEvent::Kind::kEnd;
      break;
    default:
      event.kind = FetchEvent::Kind::kError;
      break;
  }
  event.status = m.status();
  event.statusText = str(m.status_text());
  event.headers = headersFrom(m.headers());
  event.data.assign(trailer);
  event.errorKind = str(m.error_kind());
  return event;
}

}  // namespace isolane
