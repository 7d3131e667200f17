-- ticket_purchase.lua: move a purchase order through its state machine, compare-and-set.
--
--   (none) --ticket_prepare.lua--> RESERVED --AUTHORIZE--> AUTHORIZED --COMPLETE--> COMPLETED
--                                     |                        |
--                                     +---------FAIL-----------+--------------> FAILED
--
-- A transition applies only if the order is in the transition's expected state, read and
-- changed in the same atomic step: two workers racing to COMPLETE and FAIL the same order
-- cannot both win. A refused transition changes nothing and returns a WRONGSTATE error that
-- names the current state.
--
--   AUTHORIZE  RESERVED   -> AUTHORIZED  (ARGV[2] = payment reference, stored as payment_ref)
--   COMPLETE   AUTHORIZED -> COMPLETED   (the order's tickets move from reserved to sold)
--   FAIL       RESERVED or AUTHORIZED -> FAILED (tickets go back to available;
--              ARGV[2] = reason, stored as failure)
--
-- Counters never go below zero: a COMPLETE or FAIL that would drive `reserved` negative
-- (inventory edited by hand) is refused with a CORRUPT error and changes nothing.
--
-- KEYS[1]  inventory hash the order was prepared against, e.g. event:{42}
-- KEYS[2]  order hash, e.g. order:{42}:1001
-- ARGV[1]  transition: AUTHORIZE, COMPLETE or FAIL
-- ARGV[2]  payment reference (AUTHORIZE) or failure reason (FAIL); optional
--
-- Returns the new state as a string, e.g. "AUTHORIZED".
-- Errors: "WRONGSTATE order <key> is <state>, <transition> needs <expected>",
--         "NOORDER order <key> does not exist", "CORRUPT ...", "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/ticket_purchase.lua event:{42} order:{42}:1001 , AUTHORIZE pay-7731

local inventory, order = KEYS[1], KEYS[2]
local transition = ARGV[1]
local note = ARGV[2] or ''

local rules = {
  AUTHORIZE = { from = { RESERVED = true }, expected = 'RESERVED', to = 'AUTHORIZED' },
  COMPLETE = { from = { AUTHORIZED = true }, expected = 'AUTHORIZED', to = 'COMPLETED' },
  FAIL = { from = { RESERVED = true, AUTHORIZED = true }, expected = 'RESERVED or AUTHORIZED', to = 'FAILED' },
}
local rule = rules[transition or '']
if not rule then
  return redis.error_reply("ERR unknown transition '" .. tostring(transition) ..
    "', expected AUTHORIZE, COMPLETE or FAIL")
end

local state = redis.call('HGET', order, 'state')
if not state then
  return redis.error_reply('NOORDER order ' .. order .. ' does not exist')
end
if not rule.from[state] then
  return redis.error_reply('WRONGSTATE order ' .. order .. ' is ' .. state .. ', ' ..
    transition .. ' needs ' .. rule.expected)
end
local event = redis.call('HGET', order, 'event')
if event ~= inventory then
  return redis.error_reply('ERR order ' .. order .. ' belongs to ' .. tostring(event) ..
    ', not ' .. inventory)
end

local quantity = tonumber(redis.call('HGET', order, 'quantity')) or 0
if transition == 'COMPLETE' or transition == 'FAIL' then
  local reserved = tonumber(redis.call('HGET', inventory, 'reserved')) or 0
  if reserved < quantity then
    return redis.error_reply('CORRUPT ' .. inventory .. ' has ' .. reserved ..
      ' reserved tickets, order ' .. order .. ' holds ' .. quantity)
  end
  redis.call('HINCRBY', inventory, 'reserved', -quantity)
  if transition == 'COMPLETE' then
    redis.call('HINCRBY', inventory, 'sold', quantity)
  else
    redis.call('HINCRBY', inventory, 'available', quantity)
  end
end

if transition == 'AUTHORIZE' then
  redis.call('HSET', order, 'state', rule.to, 'payment_ref', note)
elseif transition == 'FAIL' then
  redis.call('HSET', order, 'state', rule.to, 'failure', note)
else
  redis.call('HSET', order, 'state', rule.to)
end
return rule.to
