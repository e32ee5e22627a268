package dev.flinkkit.restspec;

import java.io.File;
import java.io.IOException;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.flink.runtime.rest.messages.EmptyRequestBody;
import org.apache.flink.runtime.rest.messages.EmptyResponseBody;
import org.apache.flink.runtime.rest.messages.MessageHeaders;
import org.apache.flink.runtime.rest.messages.MessageParameter;
import org.apache.flink.runtime.rest.messages.MessageParameters;
import org.apache.flink.runtime.rest.messages.UntypedResponseMessageHeaders;
import org.apache.flink.runtime.rest.versioning.RestAPIVersion;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonSubTypes;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonTypeInfo;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.BeanDescription;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JavaType;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.annotation.JsonSerialize;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.type.TypeFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;

/**
 * Writes an OpenAPI 3 description of the JobManager REST API of the Flink
 * release on the class path.
 *
 * <p>Endpoints: every concrete {@link UntypedResponseMessageHeaders} class in
 * the flink-runtime and flink-runtime-web jars that can be instantiated
 * (a static {@code getInstance()}, else a public no-argument constructor),
 * that serves REST API version v1 and that is not marked
 * {@code @Documentation.ExcludeFromDocumentation}. Bodies: the request and
 * response classes the headers name, described through Jackson's own view of
 * them (the shaded Jackson Flink serialises them with): JSON property names
 * and types, enums with their serialised values, polymorphic families as
 * {@code allOf} of their base.
 *
 * <p>Usage: {@code Main VERSION OUT.yml}. A summary of what was found goes to
 * standard error.
 */
public final class Main {
    private static final String EXCLUDE_ANNOTATION =
            "org.apache.flink.annotation.docs.Documentation$ExcludeFromDocumentation";

    private final ObjectMapper mapper = new ObjectMapper();
    private final TypeFactory types = mapper.getTypeFactory();
    /** Named schemas, by the class they describe; named once all are known. */
    private final Map<Class<?>, Map<String, Object>> schemas = new HashMap<>();
    /** Every reference written, with the class it points to. */
    private final List<Map.Entry<Map<String, Object>, Class<?>>> refs = new ArrayList<>();
    /** Types already described, by canonical name (cuts recursion). */
    private final Map<String, Boolean> described = new HashMap<>();

    private Main() {}

    /**
     * Entry point.
     *
     * @param args the Flink version (for {@code info.version}) and the output file
     * @throws Exception on any failure
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Main VERSION OUT.yml");
            System.exit(2);
        }
        new Main().run(args[0], Path.of(args[1]));
    }

    private void run(String version, Path out) throws Exception {
        List<UntypedResponseMessageHeaders<?, ?>> headers = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        int excluded = 0;
        for (String name : headerClassNames()) {
            Class<?> c;
            try {
                c = Class.forName(name, false, Main.class.getClassLoader());
            } catch (Throwable e) {
                continue;
            }
            if (!UntypedResponseMessageHeaders.class.isAssignableFrom(c)
                    || c.isInterface()
                    || Modifier.isAbstract(c.getModifiers())) {
                continue;
            }
            if (hasAnnotation(c, EXCLUDE_ANNOTATION)) {
                excluded++;
                continue;
            }
            UntypedResponseMessageHeaders<?, ?> h = instantiate(c);
            if (h == null) {
                skipped.add(c.getName());
                continue;
            }
            if (!servesV1(h)) {
                skipped.add(c.getName() + " (not v1)");
                continue;
            }
            headers.add(h);
        }
        headers.sort((a, b) -> {
            int d = a.getTargetRestEndpointURL().compareTo(b.getTargetRestEndpointURL());
            return d != 0 ? d : a.getClass().getName().compareTo(b.getClass().getName());
        });

        Map<String, Map<String, Object>> paths = new TreeMap<>();
        int operations = 0;
        for (UntypedResponseMessageHeaders<?, ?> h : headers) {
            String path = openAPIPath(h.getTargetRestEndpointURL());
            String method = h.getHttpMethod().name().toLowerCase();
            Map<String, Object> ops = paths.computeIfAbsent(path, k -> new TreeMap<>());
            if (ops.containsKey(method)) {
                skipped.add(h.getClass().getName() + " (duplicate " + method + " " + path + ")");
                continue;
            }
            ops.put(method, operation(h));
            operations++;
        }

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("openapi", "3.0.1");
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("title", "Flink JobManager REST API");
        info.put(
                "description",
                "Generated by flinkkit's restspec from the REST message classes of"
                        + " flink-runtime and flink-runtime-web "
                        + version
                        + " (not Flink's own rest_v1_dispatcher.yml).");
        Map<String, Object> license = new LinkedHashMap<>();
        license.put("name", "Apache 2.0");
        license.put("url", "https://www.apache.org/licenses/LICENSE-2.0.html");
        info.put("license", license);
        info.put("version", "v1/" + version);
        doc.put("info", info);
        doc.put("paths", paths);
        Map<String, Object> components = new LinkedHashMap<>();
        components.put("schemas", nameSchemas());
        doc.put("components", components);

        YAMLFactory yf =
                YAMLFactory.builder()
                        .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
                        .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
                        .build();
        ObjectMapper yaml = new ObjectMapper(yf).enable(SerializationFeature.INDENT_OUTPUT);
        Files.writeString(out, yaml.writeValueAsString(doc));

        System.err.printf(
                "restspec %s: %d paths, %d operations, %d schemas; %d headers excluded from documentation%n",
                version, paths.size(), operations, schemas.size(), excluded);
        for (String s : skipped) {
            System.err.println("  skipped: " + s);
        }
    }

    // ---- finding the headers ----

    private static List<String> headerClassNames() throws IOException, URISyntaxException {
        TreeSet<String> names = new TreeSet<>();
        List<Class<?>> anchors = new ArrayList<>();
        anchors.add(MessageHeaders.class);
        try {
            anchors.add(Class.forName("org.apache.flink.runtime.webmonitor.handlers.JarRunHeaders"));
        } catch (ClassNotFoundException e) {
            // no flink-runtime-web on the class path
        }
        for (Class<?> anchor : anchors) {
            File jar = new File(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
            try (JarFile jf = new JarFile(jar)) {
                Enumeration<JarEntry> entries = jf.entries();
                while (entries.hasMoreElements()) {
                    String n = entries.nextElement().getName();
                    if ((n.startsWith("org/apache/flink/runtime/rest/")
                                    || n.startsWith("org/apache/flink/runtime/webmonitor/"))
                            && n.endsWith(".class")) {
                        names.add(n.substring(0, n.length() - ".class".length()).replace('/', '.'));
                    }
                }
            }
        }
        return new ArrayList<>(names);
    }

    private static boolean hasAnnotation(Class<?> c, String name) {
        for (Annotation a : c.getAnnotations()) {
            if (a.annotationType().getName().equals(name)) {
                return true;
            }
        }
        return false;
    }

    private static UntypedResponseMessageHeaders<?, ?> instantiate(Class<?> c) {
        try {
            Method m = c.getMethod("getInstance");
            if (Modifier.isStatic(m.getModifiers()) && c.isAssignableFrom(m.getReturnType())) {
                return (UntypedResponseMessageHeaders<?, ?>) m.invoke(null);
            }
        } catch (ReflectiveOperationException | LinkageError e) {
            // fall through to the constructor
        }
        try {
            return (UntypedResponseMessageHeaders<?, ?>) c.getConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            // fall through to a static field holding the instance
        }
        for (java.lang.reflect.Field f : c.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && c.isAssignableFrom(f.getType())) {
                try {
                    f.setAccessible(true);
                    return (UntypedResponseMessageHeaders<?, ?>) f.get(null);
                } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                    return null;
                }
            }
        }
        return null;
    }

    private static boolean servesV1(UntypedResponseMessageHeaders<?, ?> h) {
        for (RestAPIVersion<?> v : h.getSupportedAPIVersions()) {
            if ("v1".equals(v.getURLVersionPrefix())) {
                return true;
            }
        }
        return false;
    }

    private static String openAPIPath(String url) {
        StringBuilder b = new StringBuilder();
        for (String part : url.split("/", -1)) {
            if (b.length() > 0 || !part.isEmpty()) {
                b.append('/');
            }
            b.append(part.startsWith(":") ? "{" + part.substring(1) + "}" : part);
        }
        return b.toString();
    }

    // ---- one operation ----

    private Map<String, Object> operation(UntypedResponseMessageHeaders<?, ?> h) {
        Map<String, Object> op = new LinkedHashMap<>();
        MessageHeaders<?, ?, ?> typed = h instanceof MessageHeaders ? (MessageHeaders<?, ?, ?>) h : null;
        if (typed != null) {
            op.put("description", typed.getDescription());
            try {
                op.put("operationId", typed.operationId());
            } catch (RuntimeException e) {
                // no operation id declared
            }
        }
        op.put("x-flink-headers", h.getClass().getName());

        MessageParameters params = h.getUnresolvedMessageParameters();
        List<Object> ps = new ArrayList<>();
        for (MessageParameter<?> p : params.getPathParameters()) {
            ps.add(parameter(p, "path"));
        }
        for (MessageParameter<?> p : params.getQueryParameters()) {
            ps.add(parameter(p, "query"));
        }
        if (!ps.isEmpty()) {
            op.put("parameters", ps);
        }

        if (h.acceptsFileUploads()) {
            Map<String, Object> file = new LinkedHashMap<>();
            file.put("type", "string");
            file.put("format", "binary");
            op.put("requestBody", body("multipart/form-data", file));
        } else if (h.getRequestClass() != EmptyRequestBody.class) {
            op.put("requestBody", body("application/json", schemaFor(types.constructType(h.getRequestClass()))));
        }

        Map<String, Object> responses = new LinkedHashMap<>();
        Map<String, Object> ok = new LinkedHashMap<>();
        ok.put("description", "The request was successful.");
        String code = "200";
        if (typed != null) {
            code = String.valueOf(typed.getResponseStatusCode().code());
            Class<?> rc = typed.getResponseClass();
            if (rc != EmptyResponseBody.class) {
                JavaType rt;
                Collection<Class<?>> tp = typed.getResponseTypeParameters();
                if (tp != null && !tp.isEmpty() && rc.getTypeParameters().length == tp.size()) {
                    rt = types.constructParametricType(rc, tp.toArray(new Class<?>[0]));
                } else {
                    rt = types.constructType(rc);
                }
                ok.putAll(body("application/json", schemaFor(rt)));
            }
        }
        responses.put(code, ok);
        op.put("responses", responses);
        return op;
    }

    private Map<String, Object> parameter(MessageParameter<?> p, String in) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", p.getKey());
        m.put("in", in);
        m.put("description", p.getDescription());
        m.put("required", p.isMandatory() || "path".equals(in));
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("type", "string");
        m.put("schema", s);
        return m;
    }

    private static Map<String, Object> body(String mediaType, Object schema) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("schema", schema);
        Map<String, Object> content = new LinkedHashMap<>();
        content.put(mediaType, s);
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("content", content);
        return b;
    }

    // ---- schemas ----

    private static Map<String, Object> typed(String type, String format) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        if (format != null) {
            m.put("format", format);
        }
        return m;
    }

    private Map<String, Object> ref(Class<?> c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("$ref", "class:" + c.getName());
        refs.add(Map.entry(m, c));
        return m;
    }

    /**
     * Names the schemas: a class's simple name, unless two classes share it;
     * then a nested class is prefixed with its enclosing classes' names, and
     * top-level classes that still clash take their full name. Fills in the
     * references.
     */
    private Map<String, Object> nameSchemas() {
        Map<String, List<Class<?>>> bySimple = new HashMap<>();
        for (Class<?> c : schemas.keySet()) {
            bySimple.computeIfAbsent(c.getSimpleName(), k -> new ArrayList<>()).add(c);
        }
        Map<Class<?>, String> names = new HashMap<>();
        for (List<Class<?>> group : bySimple.values()) {
            if (group.size() == 1) {
                names.put(group.get(0), group.get(0).getSimpleName());
                continue;
            }
            long topLevel = group.stream().filter(c -> c.getEnclosingClass() == null).count();
            for (Class<?> c : group) {
                String n;
                if (c.getEnclosingClass() != null) {
                    n = c.getSimpleName();
                    for (Class<?> o = c.getEnclosingClass(); o != null; o = o.getEnclosingClass()) {
                        n = o.getSimpleName() + n;
                    }
                } else if (topLevel == 1) {
                    n = c.getSimpleName();
                } else {
                    n = c.getName().replace('.', '_');
                }
                names.put(c, n);
            }
        }
        for (Map.Entry<Map<String, Object>, Class<?>> r : refs) {
            r.getKey().put("$ref", "#/components/schemas/" + names.get(r.getValue()));
        }
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<Class<?>, Map<String, Object>> e : schemas.entrySet()) {
            if (out.put(names.get(e.getKey()), e.getValue()) != null) {
                throw new IllegalStateException("two schemas named " + names.get(e.getKey()));
            }
        }
        return out;
    }

    private Object schemaFor(JavaType t) {
        Class<?> c = t.getRawClass();
        if (c == int.class || c == Integer.class || c == short.class || c == Short.class
                || c == byte.class || c == Byte.class) {
            return typed("integer", "int32");
        }
        if (c == long.class || c == Long.class || c == java.math.BigInteger.class) {
            return typed("integer", "int64");
        }
        if (c == double.class || c == Double.class || c == java.math.BigDecimal.class) {
            return typed("number", "double");
        }
        if (c == float.class || c == Float.class) {
            return typed("number", "float");
        }
        if (c == boolean.class || c == Boolean.class) {
            return typed("boolean", null);
        }
        if (c == String.class || c == char.class || c == Character.class || CharSequence.class.isAssignableFrom(c)) {
            return typed("string", null);
        }
        if (c == Object.class || JsonNode.class.isAssignableFrom(c)) {
            return typed("object", null);
        }
        if (c == byte[].class) {
            return typed("string", "byte");
        }
        if (t.isArrayType() || t.isCollectionLikeType()) {
            Map<String, Object> m = typed("array", null);
            m.put("items", schemaFor(t.getContentType()));
            return m;
        }
        if (t.isMapLikeType()) {
            Map<String, Object> m = typed("object", null);
            m.put("additionalProperties", schemaFor(t.getContentType()));
            return m;
        }
        if (c == Optional.class || t.isReferenceType()) {
            JavaType inner = t.getReferencedType() != null ? t.getReferencedType() : t.containedTypeOrUnknown(0);
            return schemaFor(inner);
        }
        if (Number.class.isAssignableFrom(c)) {
            return typed("number", null);
        }
        String key = t.toCanonical();
        if (!described.containsKey(key)) {
            described.put(key, Boolean.TRUE);
            merge(c, describe(t));
        }
        return ref(c);
    }

    /** Adds s as c's schema, or folds it into the one there (generic bodies). */
    @SuppressWarnings("unchecked")
    private void merge(Class<?> c, Map<String, Object> s) {
        Map<String, Object> have = schemas.get(c);
        if (have == null) {
            schemas.put(c, s);
            return;
        }
        Map<String, Object> hp = (Map<String, Object>) have.get("properties");
        Map<String, Object> sp = (Map<String, Object>) s.get("properties");
        if (hp == null || sp == null) {
            return;
        }
        for (Map.Entry<String, Object> e : sp.entrySet()) {
            Object old = hp.get(e.getKey());
            if (old == null) {
                hp.put(e.getKey(), e.getValue());
            } else if (!Objects.equals(old, e.getValue())) {
                List<Object> alts = new ArrayList<>();
                if (old instanceof Map && ((Map<String, Object>) old).containsKey("oneOf")) {
                    alts.addAll((List<Object>) ((Map<String, Object>) old).get("oneOf"));
                } else {
                    alts.add(old);
                }
                if (!alts.contains(e.getValue())) {
                    alts.add(e.getValue());
                }
                alts.sort((a, b) -> String.valueOf(a).compareTo(String.valueOf(b)));
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("oneOf", alts);
                hp.put(e.getKey(), one);
            }
        }
    }

    private Map<String, Object> describe(JavaType t) {
        Class<?> c = t.getRawClass();
        if (c.isEnum()) {
            Map<String, Object> m = typed("string", null);
            List<Object> values = new ArrayList<>();
            for (Object v : c.getEnumConstants()) {
                try {
                    values.add(mapper.convertValue(v, Object.class));
                } catch (IllegalArgumentException e) {
                    values.add(((Enum<?>) v).name());
                }
            }
            m.put("enum", values);
            return m;
        }
        if (isIdentifier(c)) {
            // Identifiers are written as 32 hexadecimal digits.
            Map<String, Object> m = typed("string", null);
            m.put("pattern", "[0-9a-f]{32}");
            return m;
        }
        if (Throwable.class.isAssignableFrom(c)) {
            // Errors are written by a serializer of their own.
            return typed("object", null);
        }
        Map<String, Object> props = properties(t);
        JsonSerialize custom = c.getAnnotation(JsonSerialize.class);
        boolean customSerializer =
                custom != null && !custom.using().getName().endsWith("$None")
                        || customSerializerRegistered(c);
        if (customSerializer && props.isEmpty()) {
            // Written by a serializer of its own: identifiers as strings,
            // anything else as an object of unknown shape.
            if (isIdentifier(c)) {
                Map<String, Object> m = typed("string", null);
                m.put("pattern", "[0-9a-f]{32}");
                return m;
            }
            return typed("object", null);
        }

        Class<?> base = polymorphicBase(c);
        if (base != null && base != c) {
            Map<String, Object> baseProps = properties(types.constructType(base));
            Map<String, Object> own = new TreeMap<>(props);
            own.keySet().removeAll(baseProps.keySet());
            schemaFor(types.constructType(base));
            Map<String, Object> m = typed("object", null);
            Map<String, Object> part = typed("object", null);
            part.put("properties", own);
            List<Object> all = new ArrayList<>();
            all.add(ref(base));
            all.add(part);
            m.put("allOf", all);
            return m;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        if (base == c) {
            JsonTypeInfo info = c.getAnnotation(JsonTypeInfo.class);
            String prop = info.property().isEmpty() ? info.use().getDefaultPropertyName() : info.property();
            if (prop != null && info.include() == JsonTypeInfo.As.PROPERTY) {
                props.put(prop, typed("string", null));
                m.put("required", Collections.singletonList(prop));
            }
            JsonSubTypes subs = c.getAnnotation(JsonSubTypes.class);
            if (subs != null) {
                for (JsonSubTypes.Type st : subs.value()) {
                    if (st.value() != c) {
                        schemaFor(types.constructType(st.value()));
                    }
                }
            }
        }
        m.put("type", "object");
        if (!props.isEmpty()) {
            m.put("properties", props);
        }
        // A map written through @JsonAnyGetter: its entries are the object's keys.
        var anyGetter = mapper.getSerializationConfig().introspect(t).findAnyGetter();
        if (anyGetter != null && anyGetter.getType().isMapLikeType()) {
            m.put("additionalProperties", schemaFor(anyGetter.getType().getContentType()));
        }
        return m;
    }

    private static boolean customSerializerRegistered(Class<?> c) {
        // Flink's identifiers are written by serializers registered on the
        // REST mapper or by their own toString; they have no bean properties.
        return isIdentifier(c);
    }

    private static boolean isIdentifier(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            String n = k.getName();
            if (n.equals("org.apache.flink.util.AbstractID")
                    || n.equals("org.apache.flink.runtime.clusterframework.types.ResourceID")
                    || n.equals("org.apache.flink.runtime.rest.messages.TriggerId")) {
                return true;
            }
        }
        return false;
    }

    private static Class<?> polymorphicBase(Class<?> c) {
        Class<?> found = null;
        for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
            if (k.getAnnotation(JsonTypeInfo.class) != null) {
                found = k;
            }
        }
        return found;
    }

    /** The JSON properties of a bean type: those it writes and those it reads. */
    private Map<String, Object> properties(JavaType t) {
        Map<String, Object> props = new TreeMap<>();
        BeanDescription ser = mapper.getSerializationConfig().introspect(t);
        for (BeanPropertyDefinition p : ser.findProperties()) {
            if (p.couldSerialize() && !props.containsKey(p.getName())) {
                props.put(p.getName(), p);
            }
        }
        BeanDescription de = mapper.getDeserializationConfig().introspect(t);
        for (BeanPropertyDefinition p : de.findProperties()) {
            if (p.couldDeserialize() && !props.containsKey(p.getName())) {
                props.put(p.getName(), p);
            }
        }
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<String, Object> e : props.entrySet()) {
            BeanPropertyDefinition p = (BeanPropertyDefinition) e.getValue();
            out.put(e.getKey(), schemaFor(p.getPrimaryType()));
        }
        return out;
    }
}
