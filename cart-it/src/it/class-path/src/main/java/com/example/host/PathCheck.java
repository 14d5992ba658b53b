package com.example.host;

import dev.cart.core.Router;
import dev.cart.extract.PromptExtractor;

/** What the build checks besides routing: the library ran on the path the build put it on, sealed as declared. */
final class PathCheck {

    private PathCheck() {}

    static void expect(String path, DiscoveredReplicas pool) {
        Module core = Router.class.getModule();
        if (path.equals("module-path")) {
            Host.check(core.isNamed() && core.getName().equals("dev.cart.core"), "dev.cart.core as a named module");
            Host.check(Host.class.getModule().getName().equals("com.example.host"), "the host as a named module");
            Host.check(!core.isExported("dev.cart.core.internal"), "dev.cart.core.internal hidden from hosts");
            Host.check(core.isExported("dev.cart.core.internal", PromptExtractor.class.getModule()),
                    "dev.cart.core.internal exported to dev.cart.extract");
        } else {
            Host.check(path.equals("class-path") && !core.isNamed(), "the library on the class path");
        }
        // cart-policy is a dependency, not required by the host's module: its provides are found all the same
        try (Router router = Router.builder().replicas(pool).policy("cache_aware").build()) {
            Host.check(router.policy().name().equals("cache_aware"), "cart-policy's cache_aware by name");
        }
        System.out.println("CART ran on the " + path + (core.isNamed() ? " as module " + core.getName() : ""));
    }
}
