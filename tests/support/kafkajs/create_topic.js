'use strict'
// Creates a topic through KafkaJS's admin client (CreateTopics, then Metadata) and prints
// what the broker answered: {"event":"topic","topic":..,"partitions":[{"partition":..,"leader":..}]}.
//   node create_topic.js --broker HOST:PORT --topic NAME --partitions N

const { client, emit, main, options, recordRequests } = require('./common')

main(options({ broker: undefined, topic: undefined, partitions: '3' }), async (opts) => {
  const admin = client(opts, 'kafkajs-admin').admin()
  recordRequests('admin', admin)
  await admin.connect()
  try {
    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: opts.topic, numPartitions: Number(opts.partitions), replicationFactor: 1 }],
    })
    const { topics } = await admin.fetchTopicMetadata({ topics: [opts.topic] })
    const partitions = topics[0].partitions
      .map((p) => ({ partition: p.partitionId, leader: p.leader, error_code: p.partitionErrorCode }))
      .sort((a, b) => a.partition - b.partition)
    emit('topic', { topic: opts.topic, created, partitions })
  } finally {
    await admin.disconnect()
  }
})
