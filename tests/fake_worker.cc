// A stand-in worker for pool tests: speaks the wire protocol without V8, and misbehaves on
// purpose. `fake_worker MODE [--slot N]`, socket on descriptor 3.
//   echo        answers every request 200 "fake"
//   echo-slot   answers every request 200 "slot N" (N from its --slot argument)
//   whole       answers every request 200 "fake whole" in one frame (a complete ResponseHead)
//   whole-then-end  as whole, then sends an End for the same request
//   whole-streamed  answers with a complete ResponseHead that also says its body streams
//   head-with-body  answers with a ResponseHead that carries a body but is not complete
//   garbage     answers a request with bytes that are not a frame
//   garbage-on-thread1  answers a request with bytes that are not a frame, on the socket of its
//               second executor thread (the first of --thread-fds)
//   oversize    answers a request with a length prefix over any ceiling
//   unknown-id  answers a request with an End for an id it was never given
//   exit        exits as soon as it has said hello (a worker that cannot start)
//   mute        answers its first heartbeat (becomes ready), then no more
//   bad-status  answers with status 70000 (4464 once it is 16 bits on the wire)
//   crlf-header answers with a header value that would split the response
//   slow-slot1  echo, but the worker of slot 1 takes 3 s to say hello (a slow start)
//   two-hellos  says hello twice
//   cache-path  answers its LoadApp with a code cache whose hash names a path outside the store
//   cache-forge answers each LoadApp with a made-up code cache for the hash it was offered, and
//               one more for a hash it was not
//   load-twice  answers its LoadApp twice
//   fetch-as-b  after each LoadApp, starts a fetch on behalf of the app named "b"
//   shared-stream   streams "one", "two", "three" through its stream blocks (--blocks-fd)
//   shared-resize   tries to shrink and grow its stream blocks, then streams (through a block)
//                   what became of each try: "shrink:<errno name> grow:<errno name>"
//   shared-punch    streams "punched" through a block whose page, and the state words' page,
//                   it punched out of the memfd before naming it
//   shared-whole    a shared piece in an answer that is not streamed
//   shared-out-of-range  names a stream block past the last one
//   shared-with-trailer  a shared piece with bytes behind it as well
// Started by a server as `fake_worker worker ...`, it takes its mode from $FAKE_WORKER_MODE;
// workers get none of the server's environment, so a server test starts it through a script
// that runs `fake_worker MODE worker ...`.

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "ipc/fetch_codec.h"
#include "ipc/frame_codec.h"
#include "ipc/stream_blocks.h"

namespace {

void put(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(3, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) _exit(0);
    sent += static_cast<std::size_t>(n);
  }
}

// `bytes` in a block of `blocks`, as a shared BodyChunk of request `id`.
// `punch`: then punches the block's first page and the state words' page out of the memfd.
void putShared(isolane::StreamBlocks& blocks, std::uint64_t id, const std::string& bytes,
               std::size_t max, bool punch = false) {
  auto block = blocks.claim();
  if (!block) _exit(9);
  std::memcpy(blocks.data(*block), bytes.data(), bytes.size());
  if (punch) {
    constexpr int kPunch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    off_t at = static_cast<off_t>(isolane::kStreamBlocksOffset + *block * isolane::kStreamBlockBytes);
    if (fallocate(5, kPunch, at, 4096) != 0 || fallocate(5, kPunch, 0, 4096) != 0) _exit(10);
  }
  put(isolane::encodeSharedBodyChunk(id, *block, static_cast<std::uint32_t>(bytes.size()), max)
          .value());
}

void putStreamedHead(std::uint64_t id, std::size_t max) {
  flatbuffers::FlatBufferBuilder fbb;
  auto m = isolane::wire::CreateResponseHead(fbb, id, 200, 0, 0, /*streamed=*/true, false);
  put(isolane::finishFrame(fbb, isolane::wire::Message::ResponseHead, m.Union(), max).value());
}

const char* errnoName(int rc) {
  if (rc == 0) return "ok";
  return errno == EPERM ? "EPERM" : "other";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace isolane;
  std::string mode = argc > 1 ? argv[1] : "echo";
  if (mode == "worker") mode = getenv("FAKE_WORKER_MODE") ? getenv("FAKE_WORKER_MODE") : "echo";
  const std::size_t max = kDefaultMaxFrameBytes;
  std::string slotArg = "?";
  std::unique_ptr<StreamBlocks> blocks;
  int thread1 = -1;  // the socket of executor thread 1, if it has one
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--slot") == 0) slotArg = argv[i + 1];
    if (std::strcmp(argv[i], "--thread-fds") == 0) thread1 = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--blocks-fd") == 0 && mode.rfind("shared-", 0) == 0) {
      blocks = std::move(StreamBlocks::map(dup(std::atoi(argv[i + 1]))).value());
    }
    if (mode == "slow-slot1" && std::strcmp(argv[i], "--slot") == 0 &&
        std::strcmp(argv[i + 1], "1") == 0) {
      sleep(3);
    }
  }
  put(encodeHello(getpid(), max, "fake engine").value());
  if (mode == "two-hellos") put(encodeHello(getpid(), max, "fake engine").value());
  if (mode == "exit") return 7;
  FrameReader reader(max);
  char buf[65536];
  int heartbeats = 0;
  for (;;) {
    ssize_t n = read(3, buf, sizeof buf);
    if (n <= 0) return 0;
    reader.append(buf, static_cast<std::size_t>(n));
    const wire::Frame* f = nullptr;
    std::string error;
    while (reader.next(&f, &error) == FrameReader::Next::kFrame) {
      switch (f->message_type()) {
        case wire::Message::LoadApp: {
          const wire::LoadApp* load = f->message_as_LoadApp();
          std::string name = load->name() ? load->name()->str() : "";
          AppLoadReport report;
          if (mode == "cache-path") {
            report.sourceSha256 = "../../../../../../tmp/isolane-smuggled";
            report.producedCache = "not a cache";
          }
          if (mode == "cache-forge") {
            report.sourceSha256 = load->source_sha256() ? load->source_sha256()->str() : "";
            report.producedCache = "forged cache of " + name;
          }
          put(encodeAppLoaded(name, true, "", max, report).value());
          if (mode == "load-twice") put(encodeAppLoaded(name, true, "", max, report).value());
          if (mode == "fetch-as-b") {
            FetchCall call;
            call.op = 1;
            call.app = "b";
            call.method = "GET";
            call.url = "http://127.0.0.1:9/";
            put(encodeFetchCall(call, max).value());
          }
          break;
        }
        case wire::Message::Heartbeat: {
          if (mode == "mute" && heartbeats++ > 0) break;
          wire::HeartbeatAckT ack;
          ack.seq = f->message_as_Heartbeat()->seq();
          ack.rss_bytes = 1234;
          put(encodeHeartbeatAck(ack, max).value());
          break;
        }
        case wire::Message::Request: {
          std::uint64_t id = f->message_as_Request()->id();
          if (mode == "garbage") {
            put(std::string("\x00\x00\x00\x10\x00\x00\x00\x00garbage!garbage!", 24));
          } else if (mode == "garbage-on-thread1") {
            std::string bytes("\x00\x00\x00\x10\x00\x00\x00\x00garbage!garbage!", 24);
            if (thread1 < 0 || send(thread1, bytes.data(), bytes.size(), MSG_NOSIGNAL) <= 0) {
              _exit(9);
            }
          } else if (mode == "oversize") {
            put(std::string("\x7f\xff\xff\xff\x00\x00\x00\x00", 8));
          } else if (mode == "misaligned") {  // a message length that is not a multiple of 8
            put(std::string("\x00\x00\x00\x0c\x00\x00\x00\x00twelve bytes", 20));
          } else if (mode == "oversized-chunk") {  // one chunk over the wire's 256 KiB
            put(encodeResponseHead(id, AppResponse{}, max).value());
            put(encodeBodyChunk(id, std::string(std::size_t{300} << 10, 'x'), max).value());
          } else if (mode == "trailer-on-end") {  // raw bytes behind a message that takes none
            std::string end = encodeEnd(id, max).value();
            end[7] = 8;
            put(end + "smuggled");
          } else if (mode == "shared-stream") {
            putStreamedHead(id, max);
            for (const char* piece : {"one", "two", "three"}) putShared(*blocks, id, piece, max);
            put(encodeEnd(id, max).value());
          } else if (mode == "shared-resize") {
            std::string tries = std::string("shrink:") + errnoName(ftruncate(5, 0)) +
                                " grow:" + errnoName(ftruncate(5, off_t{1} << 30));
            putStreamedHead(id, max);
            putShared(*blocks, id, tries, max);
            put(encodeEnd(id, max).value());
          } else if (mode == "shared-punch") {
            putStreamedHead(id, max);
            putShared(*blocks, id, "punched", max, /*punch=*/true);
            put(encodeEnd(id, max).value());
          } else if (mode == "shared-whole") {
            put(encodeResponseHead(id, AppResponse{}, max).value());
            putShared(*blocks, id, "whole", max);
            put(encodeEnd(id, max).value());
          } else if (mode == "shared-out-of-range") {
            put(encodeResponseHead(id, AppResponse{}, max).value());
            put(encodeSharedBodyChunk(id, kStreamBlockCount, 4, max).value());
          } else if (mode == "shared-with-trailer") {
            put(encodeResponseHead(id, AppResponse{}, max).value());
            std::string chunk = encodeSharedBodyChunk(id, 0, 4, max).value();
            chunk[7] = 8;
            put(chunk + "smuggled");
          } else if (mode == "unknown-id") {
            put(encodeEnd(id + 1000, max).value());
          } else if (mode == "whole" || mode == "whole-then-end") {
            AppResponse r;
            r.body = "fake whole";
            put(encodeWholeResponse(id, r, max).value());
            if (mode == "whole-then-end") put(encodeEnd(id, max).value());
          } else if (mode == "whole-streamed" || mode == "head-with-body") {
            flatbuffers::FlatBufferBuilder fbb;
            bool whole = mode == "whole-streamed";
            auto m = wire::CreateResponseHead(fbb, id, 200, 0, 0, /*streamed=*/whole, whole);
            put(appendTrailer(finishFrame(fbb, wire::Message::ResponseHead, m.Union(), max, 6),
                              "forged")
                    .value());
          } else {
            AppResponse r;
            r.status = mode == "bad-status" ? 70000 : 200;
            if (mode == "crlf-header") r.headers = {{"x-a", "evil\r\nSet-Cookie: pwned=1"}};
            r.body = mode == "echo-slot" ? "slot " + slotArg : "fake";
            put(encodeResponseHead(id, r, max).value());
            put(encodeBodyChunk(id, r.body, max).value());
            put(encodeEnd(id, max).value());
          }
          break;
        }
        case wire::Message::Shutdown:
          return 0;
        default:
          break;
      }
    }
  }
}
