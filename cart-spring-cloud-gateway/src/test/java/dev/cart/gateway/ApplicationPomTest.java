package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The README's gateway application {@code pom.xml} stays in step with the build: the Spring Boot and Spring Cloud
 * versions it imports are the ones this module is built and tested with (this module's {@code pom.xml}, and the
 * example gateway's), CART's version is this build's, and what it depends on without a version is managed by the
 * BOMs it imports (CART's {@code cart-bom} manages {@code cart-spring-cloud-gateway}).
 */
class ApplicationPomTest {

    @Test
    void theReadmePomUsesTheVersionsTheModuleIsTestedWith() throws Exception {
        Element readme = parse(ReadmeBlocks.after("A gateway application's `pom.xml`", "xml"));
        Element module = parse(Files.readString(Path.of("pom.xml")));
        Element example = parse(Files.readString(Path.of("../examples/gateway/pom.xml")));
        Element bom = parse(Files.readString(Path.of("../cart-bom/pom.xml")));

        for (String property : List.of("spring-boot.version", "spring-cloud.version")) {
            String tested = text(module, "properties", property);
            assertEquals(tested, text(readme, "properties", property), "the README's " + property);
            assertEquals(tested, text(example, "properties", property), "the example gateway's " + property);
        }
        String cartVersion = text(module, "parent", "version");
        assertEquals(cartVersion, text(readme, "properties", "cart.version"), "the README's cart.version");

        List<String> imports = new ArrayList<>();
        for (Element d : children(child(child(readme, "dependencyManagement"), "dependencies"), "dependency")) {
            assertEquals("import", text(d, "scope"), "a BOM import");
            assertEquals("pom", text(d, "type"));
            imports.add(text(d, "groupId") + ":" + text(d, "artifactId") + ":" + text(d, "version"));
        }
        assertEquals(
                List.of(
                        "org.springframework.boot:spring-boot-dependencies:${spring-boot.version}",
                        "org.springframework.cloud:spring-cloud-dependencies:${spring-cloud.version}",
                        "dev.cart:cart-bom:${cart.version}"),
                imports);

        List<String> managedByCart = new ArrayList<>();
        for (Element d : children(child(child(bom, "dependencyManagement"), "dependencies"), "dependency")) {
            managedByCart.add(text(d, "groupId") + ":" + text(d, "artifactId"));
        }
        List<String> dependencies = new ArrayList<>();
        for (Element d : children(child(readme, "dependencies"), "dependency")) {
            assertEquals(null, text(d, "version"), "versions come from the BOMs: " + text(d, "artifactId"));
            dependencies.add(text(d, "groupId") + ":" + text(d, "artifactId"));
        }
        assertTrue(dependencies.contains("dev.cart:cart-spring-cloud-gateway"), dependencies.toString());
        assertTrue(managedByCart.contains("dev.cart:cart-spring-cloud-gateway"), "cart-bom manages the module");
        assertTrue(
                Files.readString(Path.of("../examples/gateway/pom.xml"))
                        .contains("<artifactId>cart-spring-cloud-gateway</artifactId>"),
                "the example gateway depends on the module too");
    }

    private static Element parse(String xml) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        Document d = f.newDocumentBuilder().parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
        return d.getDocumentElement();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            Node n = nodes.item(i);
            if (n instanceof Element e && e.getTagName().equals(name)) {
                out.add(e);
            }
        }
        return out;
    }

    private static Element child(Element parent, String name) {
        List<Element> found = children(parent, name);
        assertEquals(1, found.size(), "one <" + name + "> in <" + parent.getTagName() + ">");
        return found.get(0);
    }

    /** The text of the element at {@code path} under {@code root}, or null if there is none. */
    private static String text(Element root, String... path) {
        Element e = root;
        for (String name : path) {
            List<Element> found = children(e, name);
            if (found.isEmpty()) {
                return null;
            }
            e = found.get(0);
        }
        return e.getTextContent().trim();
    }
}
