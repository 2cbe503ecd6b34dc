'use strict'
// What the scripts share. Options come as `--name value` pairs; every result is one JSON
// object on its own stdout line (tests/integration/test_kafkajs.py reads them); KafkaJS's
// own log goes to stderr. A script ends by itself at --deadline-ms with an "error" line, so
// a hung client is reported as such and not only as a killed process.

const { Kafka, Partitioners, logLevel } = require('kafkajs')

function options(defaults) {
  const out = Object.assign({}, defaults)
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`expected --name value pairs, got ${JSON.stringify(argv.slice(i))}`)
    }
    out[argv[i].slice(2).replace(/-/g, '_')] = argv[i + 1]
  }
  for (const [name, value] of Object.entries(out)) {
    if (value === undefined) throw new Error(`--${name.replace(/_/g, '-')} is required`)
  }
  return out
}

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n')
}

// KafkaJS logs each response that carries an error code ("Response <Api>(key: k, version:
// v)", at level ERROR); besides going to stderr it becomes a line of its own:
//   {"event":"response_error","request":"SaslAuthenticate(key: 36, version: 1)","error":..}
// so a test can tell the broker's refusal from one KafkaJS made on its side.
function stderrLog() {
  return ({ namespace, level, label, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
    if (namespace === 'Connection' && String(message).startsWith('Response ') && extra.error) {
      emit('response_error', { request: message.slice('Response '.length), error: extra.error })
    }
  }
}

function client(opts, clientId) {
  const config = {
    clientId,
    brokers: [opts.broker],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    connectionTimeout: 3000,
    requestTimeout: 15000,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
  }
  if (opts.mechanism) {
    config.sasl = { mechanism: opts.mechanism, username: opts.username, password: opts.password }
  }
  return new Kafka(config)
}

// One "request" line per (who, API, version) KafkaJS sends: what it negotiated from the
// broker's ApiVersions answer.
function recordRequests(who, instrumented) {
  const seen = new Set()
  instrumented.on(instrumented.events.REQUEST, ({ payload }) => {
    const id = `${payload.apiKey}/${payload.apiVersion}`
    if (seen.has(id)) return
    seen.add(id)
    emit('request', {
      who,
      api_key: payload.apiKey,
      api_name: payload.apiName,
      api_version: payload.apiVersion,
    })
  })
}

// An idempotent producer (one request in flight, no topic auto-creation, KafkaJS's default
// partitioner) with `extra` settings (a transactionalId), its requests recorded, connected.
async function connectedProducer(kafka, extra) {
  const producer = kafka.producer({
    ...extra,
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  })
  recordRequests('producer', producer)
  await producer.connect()
  return producer
}

function describe(err) {
  const out = { name: err && err.name, message: err && err.message }
  for (const field of ['type', 'code', 'retriable', 'broker']) {
    if (err && err[field] !== undefined) out[field] = err[field]
  }
  if (err && err.originalError) out.cause = describe(err.originalError)
  return out
}

function main(opts, run) {
  const deadline = Number(opts.deadline_ms || 60000)
  const timer = setTimeout(() => {
    emit('error', { name: 'Deadline', message: `not done within ${deadline} ms` })
    process.exit(3)
  }, deadline)
  run(opts).then(
    () => {
      clearTimeout(timer)
      emit('done', {})
      process.exit(0)
    },
    (err) => {
      emit('error', describe(err))
      process.exit(1)
    },
  )
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

module.exports = { client, connectedProducer, describe, emit, main, options, recordRequests, sleep }
