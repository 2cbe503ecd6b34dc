'use strict'
// KafkaJS authenticates with --mechanism (plain, scram-sha-256 or scram-sha-512) as
// --username / --password (SaslHandshake, then SaslAuthenticate) and asks for the cluster's
// metadata over the authenticated connection. Lines:
//   {"event":"authenticated","mechanism":..,"brokers":[{"node_id":..,"host":..,"port":..}]}
// or, when the broker refuses, {"event":"error","name":"KafkaJSSASLAuthenticationError",..}.
// The other scripts authenticate the same way when given --mechanism, --username and
// --password (common.js), so the whole produce / consume scenario can run over SASL too.
//   node sasl.js --broker HOST:PORT --mechanism M --username U --password P

const { client, emit, main, options, recordRequests } = require('./common')

main(
  options({ broker: undefined, mechanism: undefined, username: undefined, password: undefined }),
  async (opts) => {
    const admin = client(opts, 'kafkajs-sasl').admin()
    recordRequests('admin', admin)
    await admin.connect()
    try {
      const cluster = await admin.describeCluster()
      emit('authenticated', {
        mechanism: opts.mechanism,
        brokers: cluster.brokers.map((b) => ({ node_id: b.nodeId, host: b.host, port: b.port })),
      })
    } finally {
      await admin.disconnect()
    }
  },
)
