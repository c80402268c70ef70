-- wrk script for the "upload" scenario: every request is a POST of WRK_UPLOAD_BYTES bytes
-- (default 10 MiB); wrk.format adds the Content-Length.
local bytes = tonumber(os.getenv("WRK_UPLOAD_BYTES") or "10485760")
wrk.method = "POST"
wrk.body = string.rep("u", bytes)
wrk.headers["Content-Type"] = "application/octet-stream"
