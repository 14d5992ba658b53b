package dev.cart.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * What Maven Central requires of every published artifact, checked on the POMs the build would deploy (each
 * published module's flattened POM) and the jars beside them. The published set is cart-bom and what it
 * lists. Runs in {@code verify}, after the modules are packaged.
 */
class PublishedPomsTest {

    private static final Path ROOT =
            Path.of(System.getProperty("cart.root", "..")).normalize();
    private static final String VERSION = System.getProperty("cart.version", "");

    @Test
    void everyPublishedPomHasCentralsMetadataAndEveryJarItsSourcesAndJavadoc() throws Exception {
        Element bom = flattenedPom("cart-bom");
        Set<String> published = new LinkedHashSet<>();
        published.add("cart-bom");
        for (Element d : children(child(child(bom, "dependencyManagement"), "dependencies"), "dependency")) {
            assertEquals("dev.cart", text(d, "groupId"), "cart-bom lists CART's artifacts only");
            published.add(text(d, "artifactId"));
        }
        assertTrue(published.size() > 1, "cart-bom lists the library artifacts");

        List<String> problems = new ArrayList<>();
        for (String artifactId : published) {
            problems.addAll(MetadataRules.check(artifactId, flattenedPom(artifactId), published));
            if (!artifactId.equals("cart-bom")) {
                for (String classifier : List.of("", "-sources", "-javadoc")) {
                    Path jar = ROOT.resolve(artifactId + "/target/" + artifactId + "-" + VERSION + classifier + ".jar");
                    if (!Files.isRegularFile(jar)) {
                        problems.add(artifactId + ": no " + ROOT.relativize(jar));
                    }
                }
            }
        }
        assertEquals(List.of(), problems, "published POMs and jars that Central would refuse");
    }

    private static Element flattenedPom(String artifactId) throws Exception {
        Path pom = ROOT.resolve(artifactId).resolve(".flattened-pom.xml");
        assertTrue(Files.isRegularFile(pom), "the published POM " + pom + " exists");
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(false);
        Document doc = f.newDocumentBuilder().parse(pom.toFile());
        return doc.getDocumentElement();
    }

    static Element child(Element parent, String name) {
        for (Element e : children(parent, name)) {
            return e;
        }
        return null;
    }

    static List<Element> children(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        if (parent == null) {
            return out;
        }
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                out.add(e);
            }
        }
        return out;
    }

    static String text(Element parent, String name) {
        Element e = child(parent, name);
        return e == null ? "" : e.getTextContent().trim();
    }
}
