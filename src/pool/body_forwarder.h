#pragma once
// Moves a streamed request body from the front's BodyPipe to where the app reads it (an
// executor of this process, or a worker's socket), piece by piece as it arrives. The pieces are
// taken at once but acknowledged only when the app has read them (RequestJob::bodyConsumed or
// a worker's BodyCredit), so the pipe's window bounds what is on the way.
//
// Thread rule: `send` runs on whichever thread pushes into the pipe (the connection's strand),
// or on the caller's; it must not block.

#include <functional>
#include <memory>
#include <string>

#include "ipc/body_pipe.h"

namespace isolane {

using BodySend = std::function<void(std::string piece, bool end, std::string error)>;

inline void forwardBody(BodyPipe& pipe, BodySend send) {
  // The pipe outlives this call; the callback holds what it needs by value.
  pipe.setReady([&pipe, send = std::move(send)] {
    std::string piece;
    for (;;) {
      switch (pipe.take(&piece)) {
        case BodyPipe::Take::kPiece:
          send(std::move(piece), false, {});
          continue;
        case BodyPipe::Take::kEnd:
          send({}, true, {});
          return;
        case BodyPipe::Take::kFailed:
          send({}, false, piece.empty() ? std::string("the request body failed") : piece);
          return;
        case BodyPipe::Take::kEmpty:
          return;
      }
    }
  });
}

}  // namespace isolane
