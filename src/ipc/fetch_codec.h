#pragma once
// Frames of the egress protocol (wire.fbs FetchCall, FetchEvent).

#include <string>

#include "ipc/fetch_exchange.h"
#include "ipc/frame_codec.h"

namespace isolane {

Result<std::string> encodeFetchCall(const FetchCall& call, std::size_t maxFrameBytes);
Result<std::string> encodeFetchEvent(const FetchEvent& event, std::size_t maxFrameBytes);
// Decoded as sent; nothing in them is trusted yet (the master checks a call's app and URL).
// `trailer`: the frame's (frame_codec.h). A call's trailer is the body of a Start; on a Pull or an
// Abort it is a protocol violation, the error.
Result<FetchCall> decodeFetchCall(const wire::FetchCall& m, std::string_view trailer);
FetchEvent decodeFetchEvent(const wire::FetchEvent& m, std::string_view trailer);

}  // namespace isolane
