package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import dev.cart.extract.answer.AnswerReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.core.io.buffer.NettyDataBufferFactory;

/** The gateway's answer buffers reach the library's answer reader where they stand (the reading itself is tested there). */
class AnswerFeedTest {

    @Test
    void nettyBuffersAreReadWhereTheyStand() {
        byte[] b = ("xx{\"usage\":{\"prompt_tokens\":8,\"prompt_tokens_details\":{\"cached_tokens\":4}}}")
                .getBytes(StandardCharsets.UTF_8);
        ByteBuf nb = Unpooled.directBuffer(b.length);
        nb.writeBytes(b).readerIndex(2);
        AnswerReader r = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", null, false);
        CartExchange.feed(r, new NettyDataBufferFactory(UnpooledByteBufAllocator.DEFAULT).wrap(nb));
        assertEquals(new ServedUsage(8, 4), r.finish());
        assertEquals(2, nb.readerIndex(), "not moved");
        nb.release();
    }

    @Test
    void anAnswerInSeveralBuffersIsReadWhole() {
        String body = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":31,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n";
        byte[] all = body.getBytes(StandardCharsets.UTF_8);
        AnswerReader r = AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/event-stream", null, false);
        for (int i = 0; i < all.length; i += 10) {
            byte[] piece = java.util.Arrays.copyOfRange(all, i, Math.min(all.length, i + 10));
            CartExchange.feed(r, DefaultDataBufferFactory.sharedInstance.wrap(piece));
        }
        assertEquals(new ServedUsage(31, 16), r.finish());
    }
}
