#include "worker/app_response.h"

#include "ipc/frame_codec.h"
#include "ipc/response_check.h"
#include "runtime/js_values.h"
#include "runtime/memory_budget.h"

namespace isolane {

Result<AppResponse> readAppResponse(JsScope& js, v8::Local<v8::Value> status,
                                    v8::Local<v8::Value> statusText, v8::Local<v8::Value> headers,
                                    v8::Local<v8::Value> body) {
  AppResponse response;
  if (!status->IsInt32()) return Error{"the status is not an integer"};
  response.status = status.As<v8::Int32>()->Value();
  if (!byteStringValue(js, statusText, &response.statusText)) {
    return Error{"the status text is not a byte string"};
  }
  std::string error;
  if (!readHeaderList(js, headers, kMaxResponseHeaderCount, &response.headers, &error)) {
    return Error{error};
  }
  if (auto bad = checkResponseHead(response)) return Error{*bad};
  if (body->IsArrayBufferView()) {
    auto view = body.As<v8::ArrayBufferView>();
    std::size_t size = view->ByteLength();
    if (size > kMaxResponseBodyBytes) {
      return Error{"the body is " + std::to_string(size) + " bytes; the limit is " +
                   std::to_string(kMaxResponseBodyBytes)};
    }
    // The copy lives until its frames are written: the app's memory meanwhile, so a thousand
    // answers of one large buffer cannot grow the worker past the app's cap.
    ByteCharge charge = chargeIsolate(js.isolate(), size);
    if (!charge) {
      return Error{"the body of " + std::to_string(size) +
                   " bytes does not fit in what is left of the app's memory outside its heap"};
    }
    response.body.resize(size);
    view->CopyContents(response.body.data(), size);
    response.bodyHold = std::make_shared<ByteCharge>(std::move(charge));
  } else if (!body->IsNullOrUndefined()) {
    return Error{"the body is not bytes"};
  }
  return response;
}

}  // namespace isolane
