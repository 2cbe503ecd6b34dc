// A mini-Kafka phase-2 client written from conformance/protocols/minikafka/FACTS.md alone: it
// writes requests as FACTS.md section 2 says the real client's serializer does -- in
// particular every CONSUME is padded with 3N+4 zero bytes (N = the topic's byte length) that
// its length field counts (2.3) -- and reads replies as the real client does: a 4-byte length,
// then length-4 bytes (5.1), with the layouts of 2.6-2.9.
//
// Usage: java -cp DIR JavaStyleClient HOST PORT OP... where OP is one of
//   produce TOPIC DATA          (DATA as UTF-8 text)
//   consume TOPIC OFFSET BATCH
//   flush
// all sent in order on one connection, each answered before the next is sent. One line per
// reply on stdout:
//   PRODUCE ok offset=N | CONSUME ok next=N count=C [OFFSET:HEXDATA]... | FLUSH ok
//   or TYPE error=<text>
// Exit 0 when every reply was read, 1 on an IOException (the line "IO <message>").

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

public class JavaStyleClient {
    private final SocketChannel channel;

    JavaStyleClient(String host, int port) throws IOException {
        channel = SocketChannel.open(new InetSocketAddress(host, port));
    }

    static ByteBuffer consumeRequest(String topic, long offset, int batchSize) {
        byte[] name = topic.getBytes(StandardCharsets.UTF_8);
        int size = 25 + 4 * name.length; // FACTS.md 2.3: 3N+4 bytes more than the fields need
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.putInt(size).put((byte) 0x01).putInt(name.length).put(name);
        buffer.putLong(offset).putInt(batchSize);
        buffer.position(size); // the rest stays zero, and is sent
        return buffer.flip();
    }

    static ByteBuffer produceRequest(String topic, byte[] data) {
        byte[] name = topic.getBytes(StandardCharsets.UTF_8);
        int size = 4 + 1 + 4 + name.length + 4 + data.length;
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.putInt(size).put((byte) 0x03).putInt(name.length).put(name);
        buffer.putInt(data.length).put(data);
        return buffer.flip();
    }

    static ByteBuffer flushRequest() {
        ByteBuffer buffer = ByteBuffer.allocate(5);
        buffer.putInt(5).put((byte) 0x05);
        return buffer.flip();
    }

    private void readFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new IOException("Connection closed by server");
            }
        }
        buffer.flip();
    }

    String call(ByteBuffer request) throws IOException {
        while (request.hasRemaining()) {
            channel.write(request);
        }
        ByteBuffer lengthBuffer = ByteBuffer.allocate(4);
        readFully(lengthBuffer);
        ByteBuffer reply = ByteBuffer.allocate(lengthBuffer.getInt() - 4);
        readFully(reply);
        return describe(reply);
    }

    static String describe(ByteBuffer reply) {
        byte type = reply.get();
        String name = type == 0x02 ? "CONSUME" : type == 0x04 ? "PRODUCE" : type == 0x06 ? "FLUSH" : "TYPE" + type;
        if (reply.get() == 0) {
            byte[] error = new byte[reply.getInt()];
            reply.get(error);
            return name + " error=" + new String(error, StandardCharsets.UTF_8);
        }
        StringBuilder out = new StringBuilder(name + " ok");
        if (type == 0x04) {
            out.append(" offset=").append(reply.getLong());
        } else if (type == 0x02) {
            out.append(" next=").append(reply.getLong());
            int count = reply.getInt();
            out.append(" count=").append(count);
            for (int i = 0; i < count; i++) {
                byte[] data = new byte[reply.getInt()];
                long offset = reply.getLong();
                reply.get(data);
                out.append(' ').append(offset).append(':');
                for (byte b : data) {
                    out.append(String.format("%02x", b));
                }
            }
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: JavaStyleClient HOST PORT OP...");
            System.exit(2);
        }
        JavaStyleClient client = new JavaStyleClient(args[0], Integer.parseInt(args[1]));
        try {
            for (int i = 2; i < args.length; ) {
                ByteBuffer request;
                switch (args[i]) {
                    case "produce":
                        request = produceRequest(args[i + 1], args[i + 2].getBytes(StandardCharsets.UTF_8));
                        i += 3;
                        break;
                    case "consume":
                        request = consumeRequest(
                                args[i + 1], Long.parseLong(args[i + 2]), Integer.parseInt(args[i + 3]));
                        i += 4;
                        break;
                    case "flush":
                        request = flushRequest();
                        i += 1;
                        break;
                    default:
                        System.err.println("unknown op " + args[i]);
                        System.exit(2);
                        return;
                }
                System.out.println(client.call(request));
                System.out.flush();
            }
        } catch (IOException e) {
            System.out.println("IO " + e.getMessage());
            System.exit(1);
        }
        client.channel.close();
    }
}
