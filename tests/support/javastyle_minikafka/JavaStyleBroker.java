// A mini-Kafka phase-2 broker written from conformance/protocols/minikafka/FACTS.md alone
// (not from the real source, which is not copied here): a test peer that behaves as FACTS.md
// says the real server does, so the suite and the fuzzer can be checked against something we
// did not derive from our own reference broker.
//
// What it does, with the FACTS.md section each rule comes from:
// - big-endian java.nio.ByteBuffer everywhere (1.1);
// - one thread "tcp-server" serves one client at a time: a non-blocking accept polled every
//   10 ms, then the accepted channel in blocking mode until it ends (4.1); bind without a
//   backlog (Java's default of 50);
// - a request is [i32 length counting its own 4 bytes][length-4 bytes]; the buffer is
//   ByteBuffer.allocate(length - 4), with no minimum and no maximum check (1.2, 1.4);
// - type 0x01 CONSUME, 0x03 PRODUCE, 0x05 FLUSH; any other type throws
//   IllegalArgumentException "Did not recognize messageType for type: <signed byte>" (3.1);
//   fields cut short throw BufferUnderflowException, negative lengths
//   NegativeArraySizeException (3.2); bytes after the last field are ignored (3.3);
// - topics are decoded as UTF-8 with replacement (2.10); per-topic in-memory logs with offsets
//   from 0, created by the first PRODUCE (3.7); a topic is also a path under a log directory,
//   so a NUL (InvalidPathException) or a path component over 255 bytes ("File name too long")
//   in a PRODUCE's topic throws (3.8), though nothing is written to disk here;
// - CONSUME reads from its offset up to its batch size and stops at the first offset that
//   cannot be read; next_offset is the last offset read + 1, and 1 when nothing was read
//   (2.11, 3.4, 3.5, 3.6);
// - FLUSH always answers 000000060601 (1.3, 3.9);
// - only an IOException is caught around a connection (the client went away: back to
//   accept); any other exception or error closes that socket and ends the serving thread,
//   while the listening socket stays bound and accepting, and nothing answers again (4.2, 4.3).
//
// Usage: java -Xmx64m -cp DIR JavaStyleBroker [--port N] (0: any free port). It prints
// "listening on 127.0.0.1:PORT" on stdout once it accepts.

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class JavaStyleBroker {
    static final byte CONSUME_REQUEST = 0x01;
    static final byte CONSUME_RESPONSE = 0x02;
    static final byte PRODUCE_REQUEST = 0x03;
    static final byte PRODUCE_RESPONSE = 0x04;
    static final byte FLUSH_REQUEST = 0x05;
    static final byte FLUSH_RESPONSE = 0x06;
    static final int NAME_MAX = 255;

    private final Map<String, List<byte[]>> logs = new HashMap<>();
    private final Path logDirectory = Paths.get("/nonexistent-javastyle-log-directory");
    private final ServerSocketChannel server;

    JavaStyleBroker(int port) throws IOException {
        server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress("127.0.0.1", port));
        server.configureBlocking(false);
    }

    int port() throws IOException {
        return ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    void start() {
        try {
            while (true) {
                SocketChannel client = server.accept();
                if (client == null) {
                    Thread.sleep(10);
                    continue;
                }
                client.configureBlocking(true);
                try {
                    while (true) {
                        int length = getMessageLength(client);
                        ByteBuffer request = getRequest(client, length);
                        ByteBuffer response = handle(request);
                        writeResponseToClient(client, response);
                    }
                } catch (IOException e) {
                    System.out.println("Client disconnected, listening to new connection");
                } finally {
                    try {
                        client.close();
                    } catch (IOException ignored) {
                        // closing a broken socket
                    }
                }
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    private static void readFully(SocketChannel client, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (client.read(buffer) < 0) {
                throw new IOException("Client disconnected");
            }
        }
        buffer.flip();
    }

    private static int getMessageLength(SocketChannel client) throws IOException {
        ByteBuffer length = ByteBuffer.allocate(4);
        readFully(client, length);
        return length.getInt();
    }

    private static ByteBuffer getRequest(SocketChannel client, int length) throws IOException {
        ByteBuffer request = ByteBuffer.allocate(length - 4); // no check: FACTS.md 1.4
        readFully(client, request);
        return request;
    }

    private static void writeResponseToClient(SocketChannel client, ByteBuffer response)
            throws IOException {
        while (response.hasRemaining()) {
            client.write(response);
        }
    }

    ByteBuffer handle(ByteBuffer request) {
        byte type = request.get();
        switch (type) {
            case CONSUME_REQUEST:
                return consume(request);
            case PRODUCE_REQUEST:
                return produce(request);
            case FLUSH_REQUEST:
                return flush();
            default:
                throw new IllegalArgumentException("Did not recognize messageType for type: " + type);
        }
    }

    private static String topic(ByteBuffer request) {
        byte[] bytes = new byte[request.getInt()];
        request.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private ByteBuffer consume(ByteBuffer request) {
        String topic = topic(request);
        long offset = request.getLong();
        int batchSize = request.getInt();
        List<byte[]> log = logs.get(topic);
        List<Long> offsets = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        long lastOffset = 0;
        long end = offset + batchSize; // may overflow, as the original's loop bound does
        for (long o = offset; o < end; o++) {
            if (log == null || o < 0 || o >= log.size()) {
                break; // the first read that fails ends the batch (FACTS.md 3.4-3.6, 6.4)
            }
            offsets.add(o);
            data.add(log.get((int) o));
            lastOffset = o;
        }
        int size = 4 + 1 + 1 + 8 + 4;
        for (byte[] d : data) {
            size += 4 + 8 + d.length;
        }
        ByteBuffer reply = ByteBuffer.allocate(size);
        reply.putInt(size).put(CONSUME_RESPONSE).put((byte) 1);
        reply.putLong(lastOffset + 1).putInt(data.size());
        for (int i = 0; i < data.size(); i++) {
            reply.putInt(data.get(i).length).putLong(offsets.get(i)).put(data.get(i));
        }
        return reply.flip();
    }

    private ByteBuffer produce(ByteBuffer request) {
        String topic = topic(request);
        byte[] data = new byte[request.getInt()];
        request.get(data);
        List<byte[]> log = logs.get(topic);
        if (log == null) {
            createLogDirectory(topic);
            log = new ArrayList<>();
            logs.put(topic, log);
        }
        long offset = log.size();
        log.add(data);
        ByteBuffer reply = ByteBuffer.allocate(14);
        reply.putInt(14).put(PRODUCE_RESPONSE).put((byte) 1).putLong(offset);
        return reply.flip();
    }

    /** The checks creating <logDir>/<topic> would make, without touching the disk. */
    private void createLogDirectory(String topic) {
        Path path = logDirectory.resolve(topic); // InvalidPathException on a NUL
        for (Path part : path) {
            if (part.toString().getBytes(StandardCharsets.UTF_8).length > NAME_MAX) {
                throw new RuntimeException(
                        "Failed to create log directory: " + path + ": File name too long");
            }
        }
    }

    private static ByteBuffer flush() {
        ByteBuffer reply = ByteBuffer.allocate(6);
        reply.putInt(6).put(FLUSH_RESPONSE).put((byte) 1);
        return reply.flip();
    }

    public static void main(String[] args) throws Exception {
        int port = 0;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--port") && i + 1 < args.length) {
                port = Integer.parseInt(args[++i]);
            } else {
                System.err.println("usage: JavaStyleBroker [--port N]");
                System.exit(2);
            }
        }
        JavaStyleBroker broker = new JavaStyleBroker(port);
        Thread serving = new Thread(broker::start, "tcp-server");
        serving.start();
        System.out.println("listening on 127.0.0.1:" + broker.port());
        System.out.flush();
        // The rest of the application (REST, in the original) lives on: the process stays up
        // with its port bound after the serving thread has died (FACTS.md 4.3).
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
