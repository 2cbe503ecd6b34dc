'use strict'
// A consumer group of --members KafkaJS consumers (in one process, each with its own
// connections) reads --topic from the beginning until --count records have come in all,
// then waits --settle-ms for any duplicate and leaves. Lines:
//   {"event":"join","member":m,"member_id":..,"leader":bool,"assigned":[partitions]}
//   {"event":"ready","assigned":{m:[partitions]}}  once the members' latest assignments are
//     disjoint, cover every partition and none is empty (the group is settled: the test may
//     produce now)
//   {"event":"record","member":m,"partition":p,"offset":o,"key":..,"value":..,"headers":{..}}
//   {"event":"left","member":m}
// Offsets are committed by KafkaJS (autoCommit after each batch and on leaving).
//   node consume.js --broker HOST:PORT --topic NAME --group G --count N [--members 2]

const { client, emit, main, options, recordRequests, sleep } = require('./common')

main(
  options({
    broker: undefined,
    topic: undefined,
    group: undefined,
    count: undefined,
    members: '2',
    partitions: undefined,
    settle_ms: '1500',
    read_uncommitted: 'false',
  }),
  async (opts) => {
    const kafka = client(opts, 'kafkajs-consumer')
    const members = Number(opts.members)
    const partitions = Number(opts.partitions)
    const latest = {}
    let ready = false
    let got = 0
    const consumers = []
    for (let m = 0; m < members; m++) {
      const consumer = kafka.consumer({
        groupId: opts.group,
        sessionTimeout: 10000,
        rebalanceTimeout: 20000,
        heartbeatInterval: 500,
        maxWaitTimeInMs: 300,
        readUncommitted: opts.read_uncommitted === 'true',
        allowAutoTopicCreation: false,
        retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
      })
      recordRequests(`consumer-${m}`, consumer)
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        const assigned = ((payload.memberAssignment || {})[opts.topic] || []).slice().sort((a, b) => a - b)
        latest[m] = assigned
        emit('join', { member: m, member_id: payload.memberId, leader: payload.isLeader, assigned })
        const all = Object.values(latest)
        const union = new Set(all.flat())
        if (
          !ready &&
          all.length === members &&
          all.every((a) => a.length > 0) &&
          union.size === partitions &&
          all.reduce((n, a) => n + a.length, 0) === partitions
        ) {
          ready = true
          emit('ready', { assigned: latest })
        }
      })
      consumers.push(consumer)
    }
    await Promise.all(consumers.map((c) => c.connect()))
    try {
      await Promise.all(
        consumers.map(async (consumer, m) => {
          await consumer.subscribe({ topics: [opts.topic], fromBeginning: true })
          await consumer.run({
            eachMessage: async ({ partition, message }) => {
              const headers = {}
              for (const [k, v] of Object.entries(message.headers || {})) headers[k] = String(v)
              emit('record', {
                member: m,
                partition,
                offset: Number(message.offset),
                key: message.key === null ? null : message.key.toString(),
                value: message.value === null ? null : message.value.toString(),
                headers,
              })
              got++
            },
          })
        }),
      )
      while (got < Number(opts.count)) await sleep(50)
      await sleep(Number(opts.settle_ms))
    } finally {
      for (let m = 0; m < members; m++) {
        await consumers[m].disconnect()
        emit('left', { member: m })
      }
    }
  },
)
