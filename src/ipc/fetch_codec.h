#pragma once
// Frames of the egress protocol (wire.fbs FetchCall, FetchEvent).

#include <string>

#include "ipc/fetch_exchange.h"
#include "ipc/frame_codec.h"

namespace isolane {

Result<std::string> encodeFetchCall(const FetchCall& call, std::size_t maxFrameBytes);
Result<std::string> encodeFetchEvent(const FetchEvent& event, std::size_t maxFrameBytes);
// Decoded as sent; nothing in them is trusted yet (the master checks a call's app and URL).
FetchCall decodeFetchCall(const wire::FetchCall& m);
FetchEvent decodeFetchEvent(const wire::FetchEvent& m);

}  // namespace isolane
