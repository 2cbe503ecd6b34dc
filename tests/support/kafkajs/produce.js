'use strict'
// An idempotent KafkaJS producer sends --count keyed records (key-<i>, value-<i>, headers
// index and origin) with acks -1, --batch records per send, and prints where each landed:
// {"event":"sent","index":i,"key":..,"partition":p,"offset":o}.
// The partition of each record is chosen by KafkaJS's own default (murmur2) partitioner and
// given to the producer explicitly, so the offset of each record follows from the base
// offset the broker answered for its partition.
//   node produce.js --broker HOST:PORT --topic NAME --count N [--first I] [--batch B]

const { Partitioners } = require('kafkajs')
const { client, connectedProducer, emit, main, options, recordRequests } = require('./common')

main(
  options({ broker: undefined, topic: undefined, count: '30', first: '0', batch: '7' }),
  async (opts) => {
    const kafka = client(opts, 'kafkajs-producer')
    const admin = kafka.admin()
    recordRequests('admin', admin)
    await admin.connect()
    let partitionMetadata
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [opts.topic] })
      partitionMetadata = topics[0].partitions
    } finally {
      await admin.disconnect()
    }
    const partitionOf = Partitioners.DefaultPartitioner()

    const producer = await connectedProducer(kafka, {})
    try {
      const first = Number(opts.first)
      const last = first + Number(opts.count)
      for (let start = first; start < last; start += Number(opts.batch)) {
        const messages = []
        for (let i = start; i < Math.min(last, start + Number(opts.batch)); i++) {
          const message = {
            key: `key-${i}`,
            value: `value-${i}`,
            headers: { index: String(i), origin: 'kafkajs' },
          }
          message.partition = partitionOf({ topic: opts.topic, partitionMetadata, message })
          messages.push(message)
        }
        const answers = await producer.send({ topic: opts.topic, acks: -1, messages })
        const next = {}
        for (const a of answers) {
          if (a.errorCode !== 0) throw new Error(`partition ${a.partition}: error ${a.errorCode}`)
          next[a.partition] = Number(a.baseOffset)
        }
        for (const m of messages) {
          if (next[m.partition] === undefined) throw new Error(`no answer for partition ${m.partition}`)
          emit('sent', {
            index: Number(m.headers.index),
            key: m.key,
            partition: m.partition,
            offset: next[m.partition]++,
          })
        }
      }
    } finally {
      await producer.disconnect()
    }
  },
)
