'use strict'
// A transactional KafkaJS producer (--txn-id) runs three transactions on --topic, each of
// --count records with keys <outcome>-<i>: the first commits (and, inside it, commits the
// offset --offset of partition 0 for group --offsets-group with sendOffsets, i.e.
// AddOffsetsToTxn and TxnOffsetCommit), the second aborts, the third commits. Then a
// consumer with readUncommitted false (group --group) reads the topic from the beginning
// until it has the 2 * --count committed records and waits --settle-ms for more. Lines:
//   {"event":"sent","txn":n,"outcome":"commit"|"abort","key":..,"partition":p,"offset":o}
//   {"event":"ended","txn":n,"outcome":..}
//   {"event":"record","partition":p,"offset":o,"key":..,"value":..}
//   node transactions.js --broker HOST:PORT --topic NAME --txn-id ID --group G
//       --offsets-group G2 [--count N] [--offset O]

const { client, connectedProducer, emit, main, options, recordRequests, sleep } = require('./common')

main(
  options({
    broker: undefined,
    topic: undefined,
    txn_id: undefined,
    group: undefined,
    offsets_group: undefined,
    count: '5',
    offset: '1',
    settle_ms: '1500',
  }),
  async (opts) => {
    const kafka = client(opts, 'kafkajs-txn')
    const count = Number(opts.count)
    const producer = await connectedProducer(kafka, { transactionalId: opts.txn_id })
    try {
      const outcomes = ['commit', 'abort', 'commit']
      for (let n = 0; n < outcomes.length; n++) {
        const outcome = outcomes[n]
        const txn = await producer.transaction()
        try {
          const messages = []
          for (let i = 0; i < count; i++) {
            const index = n * count + i
            messages.push({ key: `${outcome}-${index}`, value: `value-${index}`, partition: i % 2 })
          }
          const answers = await txn.send({ topic: opts.topic, acks: -1, messages })
          const next = {}
          for (const a of answers) next[a.partition] = Number(a.baseOffset)
          for (const m of messages) {
            emit('sent', { txn: n, outcome, key: m.key, partition: m.partition, offset: next[m.partition]++ })
          }
          if (n === 0) {
            await txn.sendOffsets({
              consumerGroupId: opts.offsets_group,
              topics: [{ topic: opts.topic, partitions: [{ partition: 0, offset: opts.offset }] }],
            })
          }
        } catch (err) {
          await txn.abort()
          throw err
        }
        if (outcome === 'commit') await txn.commit()
        else await txn.abort()
        emit('ended', { txn: n, outcome })
      }
    } finally {
      await producer.disconnect()
    }

    const consumer = kafka.consumer({
      groupId: opts.group,
      readUncommitted: false,
      maxWaitTimeInMs: 300,
      allowAutoTopicCreation: false,
    })
    recordRequests('consumer', consumer)
    await consumer.connect()
    try {
      let got = 0
      await consumer.subscribe({ topics: [opts.topic], fromBeginning: true })
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          emit('record', {
            partition,
            offset: Number(message.offset),
            key: message.key === null ? null : message.key.toString(),
            value: message.value === null ? null : message.value.toString(),
          })
          got++
        },
      })
      while (got < 2 * count) await sleep(50)
      await sleep(Number(opts.settle_ms))
    } finally {
      await consumer.disconnect()
    }
  },
)
