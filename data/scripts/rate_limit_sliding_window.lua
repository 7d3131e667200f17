-- rate_limit_sliding_window.lua: allow at most LIMIT requests in any WINDOW ms (sliding log).
--
-- Each allowed request is logged in a sorted set scored by its time; entries older than
-- the window are trimmed on every call, so the window slides with the clock instead of
-- resetting at fixed boundaries. Refused requests are not logged: a client that is refused
-- recovers as soon as its oldest allowed request leaves the window. The key expires one
-- window after the last allowed request, so idle clients cost nothing.
--
-- KEYS[1]  log sorted set, e.g. rl:sliding:{user:17}:upload
-- ARGV[1]  limit: requests allowed per window, >= 1
-- ARGV[2]  window length in ms, >= 1
-- ARGV[3]  current time in ms (from the caller's clock, so the script is deterministic)
-- ARGV[4]  unique id of this request (e.g. "<now>-<random>" or a request id); a repeated id
--          would replace the earlier entry instead of adding one
--
-- A request at time t stays in the window while t > now - window.
--
-- Returns {allowed, remaining, retry_after_ms}: allowed is 1 or 0, remaining the requests
-- still allowed right now, retry_after_ms 0 when allowed, else the wait until a slot frees.
-- Errors: "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/rate_limit_sliding_window.lua rl:sliding:{user:17}:upload , 5 1000 1700000000000 req-1

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local member = ARGV[4]
if not limit or limit < 1 or limit % 1 ~= 0 then
  return redis.error_reply('ERR limit must be a positive integer')
end
if not window or window < 1 or window % 1 ~= 0 then
  return redis.error_reply('ERR window must be a positive integer (ms)')
end
if not now then
  return redis.error_reply('ERR now must be a time in ms')
end
if not member or member == '' then
  return redis.error_reply('ERR a unique request id is required')
end

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1, 0}
end

local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local retry_after = tonumber(oldest[2]) + window - now
return {0, 0, retry_after}
