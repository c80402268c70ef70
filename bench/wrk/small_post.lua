-- wrk script: POST a 195-byte JSON body (a typical API call), for bench/small_post_ab.sh.
wrk.method = "POST"
wrk.body = string.rep('{"k":"value"}', 15)
wrk.headers["Content-Type"] = "application/json"
