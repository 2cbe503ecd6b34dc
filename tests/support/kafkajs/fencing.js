'use strict'
// Producer fencing: two KafkaJS producers with one transactional id. The first (a) opens a
// transaction and sends a record; the second (b) initialises (InitProducerId: the broker
// aborts a's open transaction and bumps the epoch, answering CONCURRENT_TRANSACTIONS until
// that is done, which KafkaJS retries), sends and commits. Then a, fenced, tries to send
// and to commit. Lines:
//   {"event":"sent","who":"a"|"b","key":..,"partition":0,"offset":o}
//   {"event":"refused","who":"a","step":"send"|"commit","type":..,"code":..}
//   {"event":"accepted","who":"a","step":..}  (what a fenced producer must not get)
//   {"event":"ended","who":"b","outcome":"commit"}
//   node fencing.js --broker HOST:PORT --topic NAME --txn-id ID

const { client, describe, emit, main, options, recordRequests } = require('./common')

main(options({ broker: undefined, topic: undefined, txn_id: undefined }), async (opts) => {
  const kafka = client(opts, 'kafkajs-fencing')
  const producer = (who) => {
    const p = kafka.producer({ transactionalId: opts.txn_id, idempotent: true, maxInFlightRequests: 1 })
    recordRequests(who, p)
    return p
  }
  const send = async (txn, who, key) => {
    const [answer] = await txn.send({ topic: opts.topic, acks: -1, messages: [{ key, value: key, partition: 0 }] })
    emit('sent', { who, key, partition: 0, offset: Number(answer.baseOffset) })
  }
  const refused = async (who, step, action) => {
    try {
      await action()
      emit('accepted', { who, step })
    } catch (err) {
      const e = describe(err)
      emit('refused', { who, step, type: e.type || (e.cause || {}).type, code: e.code || (e.cause || {}).code, name: e.name })
    }
  }
  const a = producer('a')
  const b = producer('b')
  await a.connect()
  await b.connect()
  try {
    const ta = await a.transaction()
    await send(ta, 'a', 'a-1')
    const tb = await b.transaction()
    await send(tb, 'b', 'b-1')
    await refused('a', 'send', () => send(ta, 'a', 'a-2'))
    await refused('a', 'commit', () => ta.commit())
    await tb.commit()
    emit('ended', { who: 'b', outcome: 'commit' })
  } finally {
    await a.disconnect().catch(() => {})
    await b.disconnect()
  }
})
