package dev.cart.proxy.netty;

import dev.cart.proxy.http.HeaderView;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The view of a Netty header map that a decoder made (names and values validated as it read them): the
 * front edits such a map into the next message's head ({@link ClientExchange#pruned}) instead of copying it.
 */
final class NettyHeaders implements HeaderView {

    /** Netty's headers as the core reads them: no copy. */
    static HeaderView view(HttpHeaders h) {
        return new NettyHeaders(h);
    }

    final HttpHeaders map;

    NettyHeaders(HttpHeaders map) {
        this.map = map;
    }

    @Override
    public String first(String name) {
        return map.get(name);
    }

    @Override
    public List<String> all(String name) {
        return map.getAll(name);
    }

    @Override
    public void forEach(BiConsumer<String, String> each) {
        for (Iterator<Map.Entry<String, String>> it = map.iteratorAsString(); it.hasNext(); ) {
            Map.Entry<String, String> e = it.next();
            each.accept(e.getKey(), e.getValue());
        }
    }

    @Override
    public void forEachName(Consumer<CharSequence> each) {
        for (Iterator<Map.Entry<CharSequence, CharSequence>> it = map.iteratorCharSequence(); it.hasNext(); ) {
            each.accept(it.next().getKey());
        }
    }

    @Override
    public boolean has(String name) {
        return map.contains(name);
    }
}
