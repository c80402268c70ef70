-- wrk script for the "memory" scenario with many apps: each request goes to the next of
-- WRK_APPS routes /app1/ ... /appN/, so every app (context) has served requests before RSS is read.
local count = tonumber(os.getenv("WRK_APPS") or "1")
local next_app = 0

request = function()
  next_app = next_app % count + 1
  return wrk.format("GET", "/app" .. next_app .. "/")
end
