/**
 * Flow control in front of CART's router: {@link dev.cart.flow.FlowControl} queues a request that finds no
 * replica with a free slot, orders the waiting ones by priority band, tenant share of work and arrival, and
 * sheds at once with a retry hint what cannot make its deadline.
 */
module dev.cart.flow {
    exports dev.cart.flow;

    requires transitive dev.cart.core;
    requires org.slf4j;
    requires static com.google.errorprone.annotations;
    // static transitive: the exported API carries @Nullable, a reader of it sees the annotation
    requires static transitive org.jspecify;
}
