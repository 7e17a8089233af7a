/*
 * The interop tests' driver: Apache Samza's own classes (from the jars support/samza_dist.py fetches)
 * decode bytes the engine wrote and encode Samza's own messages for the engine to read.
 *
 * Protocol (tests/samza_interop/harness.py): one JSON request per line on stdin, one JSON answer per
 * line on stdout. Bytes travel base64-encoded. An answer is {"ok":true,...} or {"ok":false,"error":..}
 * with Samza's exception, so a test sees exactly why Samza refused the engine's bytes.
 *
 * Compiled by the tests' fixture with javac into a temporary directory; never committed as a binary.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.samza.Partition;
import org.apache.samza.checkpoint.CheckpointId;
import org.apache.samza.checkpoint.CheckpointV1;
import org.apache.samza.checkpoint.CheckpointV2;
import org.apache.samza.checkpoint.kafka.KafkaChangelogSSPOffset;
import org.apache.samza.checkpoint.kafka.KafkaCheckpointLogKey;
import org.apache.samza.checkpoint.kafka.KafkaCheckpointLogKeySerde;
import org.apache.samza.checkpoint.kafka.KafkaStateCheckpointMarker;
import org.apache.samza.container.TaskName;
import org.apache.samza.coordinator.stream.CoordinatorStreamKeySerde;
import org.apache.samza.coordinator.stream.CoordinatorStreamValueSerde;
import org.apache.samza.coordinator.stream.messages.CoordinatorStreamMessage;
import org.apache.samza.coordinator.stream.messages.Delete;
import org.apache.samza.coordinator.stream.messages.SetChangelogMapping;
import org.apache.samza.coordinator.stream.messages.SetConfig;
import org.apache.samza.coordinator.stream.messages.SetContainerHostMapping;
import org.apache.samza.metrics.reporter.Metrics;
import org.apache.samza.metrics.reporter.MetricsHeader;
import org.apache.samza.metrics.reporter.MetricsSnapshot;
import org.apache.samza.serializers.ByteSerde;
import org.apache.samza.serializers.CheckpointV1Serde;
import org.apache.samza.serializers.CheckpointV2Serde;
import org.apache.samza.serializers.IntermediateMessageSerde;
import org.apache.samza.serializers.JsonSerde;
import org.apache.samza.serializers.MetricsSnapshotSerde;
import org.apache.samza.serializers.MetricsSnapshotSerdeV2;
import org.apache.samza.serializers.Serde;
import org.apache.samza.system.ControlMessage;
import org.apache.samza.system.DrainMessage;
import org.apache.samza.system.EndOfStreamMessage;
import org.apache.samza.system.SystemStreamPartition;
import org.apache.samza.system.WatermarkMessage;

public class SamzaWire {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    // Samza's classes log through log4j 1.x; the protocol owns stdout, so nothing else may print there
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    System.setOut(System.err);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) {
        continue;
      }
      ObjectNode answer = JSON.createObjectNode();
      try {
        JsonNode request = JSON.readTree(line);
        answer = handle(request.get("op").asText(), request);
        answer.put("ok", true);
      } catch (Throwable e) {
        answer.put("ok", false);
        answer.put("error", e.getClass().getName() + ": " + e.getMessage()
            + (e.getCause() != null ? " (caused by " + e.getCause() + ")" : ""));
      }
      out.println(JSON.writeValueAsString(answer));
    }
  }

  private static ObjectNode handle(String op, JsonNode r) throws Exception {
    switch (op) {
      case "ping":
        return JSON.createObjectNode().put("samzaVersion", SetConfig.class.getPackage().getImplementationVersion());
      case "intermediate.decode":
        return intermediateDecode(bytes(r, "bytes"));
      case "intermediate.encode":
        return withBytes(intermediateSerde().toBytes(controlOrUser(r)));
      case "coordinator.decode":
        return coordinatorDecode(bytes(r, "key"), r.hasNonNull("value") ? bytes(r, "value") : null);
      case "coordinator.encode":
        return coordinatorEncode(r);
      case "coordinator.store.decode":
        return coordinatorStoreDecode(r.get("type").asText(), bytes(r, "key"), bytes(r, "value"));
      case "coordinator.store.encode":
        return coordinatorStoreEncode(r.get("type").asText(), r.get("key").asText(), r.get("value").asText());
      case "metrics.decode":
        return metricsDecode(metricsSerde(r.get("serde").asText()), bytes(r, "bytes"));
      case "metrics.encode":
        return withBytes(metricsSerde(r.get("serde").asText()).toBytes(metricsSnapshot(r)));
      case "checkpoint.key.decode": {
        KafkaCheckpointLogKey key = new KafkaCheckpointLogKeySerde().fromBytes(bytes(r, "bytes"));
        return JSON.createObjectNode().put("type", key.getType()).put("taskName", key.getTaskName().getTaskName())
            .put("grouperFactory", key.getGrouperFactoryClassName());
      }
      case "checkpoint.key.encode":
        return withBytes(new KafkaCheckpointLogKeySerde().toBytes(new KafkaCheckpointLogKey(r.get("type").asText(),
            new TaskName(r.get("taskName").asText()), r.get("grouperFactory").asText())));
      case "checkpoint.v1.decode": {
        CheckpointV1 checkpoint = new CheckpointV1Serde().fromBytes(bytes(r, "bytes"));
        if (checkpoint == null) {
          throw new IllegalStateException("CheckpointV1Serde returned null (it could not read the bytes)");
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("offsets", offsetsJson(checkpoint.getOffsets()));
        return out;
      }
      case "checkpoint.v1.encode":
        return withBytes(new CheckpointV1Serde().toBytes(new CheckpointV1(offsets(r.get("offsets")))));
      case "checkpoint.v2.decode":
        return checkpointV2Decode(new CheckpointV2Serde().fromBytes(bytes(r, "bytes")));
      case "checkpoint.v2.encode":
        return withBytes(new CheckpointV2Serde().toBytes(checkpointV2(r)));
      case "startpoint.store":
        return startpointStore(r);
      case "checkpoint.changelog-offset":
        // what Samza's TaskInstance puts in a CheckpointV1 for a changelog partition
        return JSON.createObjectNode().put("value", new KafkaChangelogSSPOffset(
            CheckpointId.deserialize(r.get("checkpointId").asText()),
            r.hasNonNull("offset") ? r.get("offset").asText() : null).toString());
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  // -- intermediate streams: org.apache.samza.serializers.IntermediateMessageSerde ------------------

  private static IntermediateMessageSerde intermediateSerde() {
    return new IntermediateMessageSerde(new ByteSerde());
  }

  private static ObjectNode intermediateDecode(byte[] data) {
    Object message = intermediateSerde().fromBytes(data);
    ObjectNode out = JSON.createObjectNode();
    if (message instanceof byte[]) {
      out.put("class", "user");
      out.put("user", Base64.getEncoder().encodeToString((byte[]) message));
      return out;
    }
    ControlMessage control = (ControlMessage) message;
    out.put("class", control.getClass().getSimpleName());
    out.put("taskName", control.getTaskName());
    out.put("version", control.getVersion());
    if (control instanceof WatermarkMessage) {
      out.put("timestamp", ((WatermarkMessage) control).getTimestamp());
    }
    if (control instanceof DrainMessage) {
      out.put("runId", ((DrainMessage) control).getRunId());
    }
    return out;
  }

  private static Object controlOrUser(JsonNode r) {
    String kind = r.get("kind").asText();
    String taskName = r.hasNonNull("taskName") ? r.get("taskName").asText() : null;
    switch (kind) {
      case "user":
        return bytes(r, "user");
      case "watermark":
        return new WatermarkMessage(r.get("timestamp").asLong(), taskName);
      case "end-of-stream":
        return new EndOfStreamMessage(taskName);
      case "drain":
        return new DrainMessage(taskName, r.get("runId").asText());
      default:
        throw new IllegalArgumentException("unknown intermediate message kind " + kind);
    }
  }

  // -- coordinator stream: CoordinatorStreamSystemConsumer / Producer's JsonSerde, the message classes ---

  private static ObjectNode coordinatorDecode(byte[] key, byte[] value) {
    // as CoordinatorStreamSystemConsumer reads a message: key a JSON list, value a JSON map (null: delete)
    Object[] keyArray = new JsonSerde<List<?>>().fromBytes(key).toArray();
    Map<String, Object> valueMap = value == null ? null : new JsonSerde<Map<String, Object>>().fromBytes(value);
    CoordinatorStreamMessage message = new CoordinatorStreamMessage(keyArray, valueMap);
    ObjectNode out = JSON.createObjectNode();
    out.put("version", message.getVersion());
    out.put("type", message.getType());
    out.put("key", message.getKey());
    out.put("isDelete", message.isDelete());
    if (message.isDelete()) {
      return out;
    }
    out.put("source", message.getSource());
    out.put("username", message.getUsername());
    out.put("timestamp", message.getTimestamp());
    out.set("messageMap", JSON.valueToTree(message.getMessageMap()));
    switch (message.getType()) {
      case SetConfig.TYPE:
        out.put("configValue", new SetConfig(message).getConfigValue());
        break;
      case SetChangelogMapping.TYPE: {
        SetChangelogMapping mapping = new SetChangelogMapping(message);
        out.put("taskName", mapping.getTaskName());
        Integer partition = mapping.getPartition();
        if (partition == null) {
          out.putNull("partition");
        } else {
          out.put("partition", partition.intValue());
        }
        break;
      }
      case SetContainerHostMapping.TYPE: {
        SetContainerHostMapping mapping = new SetContainerHostMapping(message);
        out.put("hostLocality", mapping.getHostLocality());
        // no public getters for the JMX addresses: the values map, as getMessageValue reads it
        Map<?, ?> values = (Map<?, ?>) mapping.getMessageMap().get("values");
        out.put("jmxUrl", (String) values.get(SetContainerHostMapping.JMX_URL_KEY));
        out.put("jmxTunnelingUrl", (String) values.get(SetContainerHostMapping.JMX_TUNNELING_URL_KEY));
        break;
      }
      default:
        break;
    }
    return out;
  }

  private static ObjectNode coordinatorEncode(JsonNode r) {
    String type = r.get("type").asText();
    String source = r.get("source").asText();
    String key = r.get("key").asText();
    CoordinatorStreamMessage message;
    switch (type) {
      case SetConfig.TYPE:
        message = new SetConfig(source, key, r.get("value").asText());
        break;
      case SetChangelogMapping.TYPE:
        message = new SetChangelogMapping(source, key, r.get("partition").asInt());
        break;
      case SetContainerHostMapping.TYPE:
        message = new SetContainerHostMapping(source, key, r.get("host").asText(), r.get("jmxUrl").asText(),
            r.get("jmxTunnelingUrl").asText());
        break;
      case "delete":
        message = new Delete(source, key, r.get("deletedType").asText());
        break;
      default:
        throw new IllegalArgumentException("unknown coordinator stream message type " + type);
    }
    // as CoordinatorStreamSystemProducer.send writes it
    ObjectNode out = JSON.createObjectNode();
    byte[] keyBytes = new JsonSerde<List<?>>().toBytes(java.util.Arrays.asList(message.getKeyArray()));
    out.put("key", Base64.getEncoder().encodeToString(keyBytes));
    if (message.isDelete()) {
      out.putNull("value");
    } else {
      out.put("value", Base64.getEncoder().encodeToString(
          new JsonSerde<Map<String, Object>>().toBytes(message.getMessageMap())));
    }
    return out;
  }

  private static ObjectNode coordinatorStoreDecode(String type, byte[] key, byte[] value) {
    // the metadata-store path (CoordinatorStreamStore): the key's own serde and the typed value serde
    ObjectNode out = JSON.createObjectNode();
    out.put("key", new CoordinatorStreamKeySerde(type).fromBytes(key));
    out.put("value", new CoordinatorStreamValueSerde(type).fromBytes(value));
    return out;
  }

  private static ObjectNode coordinatorStoreEncode(String type, String key, String value) {
    ObjectNode out = JSON.createObjectNode();
    out.put("key", Base64.getEncoder().encodeToString(new CoordinatorStreamKeySerde(type).toBytes(key)));
    out.put("value", Base64.getEncoder().encodeToString(new CoordinatorStreamValueSerde(type).toBytes(value)));
    return out;
  }

  // -- metrics snapshots: MetricsSnapshotSerde (JSON) and MetricsSnapshotSerdeV2 ----------------------

  private static Serde<MetricsSnapshot> metricsSerde(String name) {
    switch (name) {
      case "json":
        return new MetricsSnapshotSerde();
      case "v2":
        return new MetricsSnapshotSerdeV2();
      default:
        throw new IllegalArgumentException("unknown metrics serde " + name);
    }
  }

  private static ObjectNode metricsDecode(Serde<MetricsSnapshot> serde, byte[] data) {
    MetricsSnapshot snapshot = serde.fromBytes(data);
    if (snapshot == null) {
      // MetricsSnapshotSerdeV2 logs its exception and returns null
      throw new IllegalStateException(serde.getClass().getSimpleName() + " returned null (it could not read the bytes)");
    }
    MetricsHeader h = snapshot.getHeader();
    ObjectNode header = JSON.createObjectNode();
    header.put("job-name", h.getJobName());
    header.put("job-id", h.getJobId());
    header.put("container-name", h.getContainerName());
    header.put("exec-env-container-id", h.getExecEnvironmentContainerId());
    h.getSamzaEpochId().ifPresent(epoch -> header.put("samza-epoch-id", epoch));
    header.put("source", h.getSource());
    header.put("version", h.getVersion());
    header.put("samza-version", h.getSamzaVersion());
    header.put("host", h.getHost());
    header.put("time", h.getTime());
    header.put("reset-time", h.getResetTime());
    ObjectNode out = JSON.createObjectNode();
    out.set("header", header);
    out.set("metrics", JSON.valueToTree(snapshot.getMetrics().getAsMap()));
    // the Java type of every metric value, as Samza's classes hold it
    ObjectNode types = JSON.createObjectNode();
    for (Map.Entry<String, Map<String, Object>> group : snapshot.getMetrics().getAsMap().entrySet()) {
      ObjectNode g = types.putObject(group.getKey());
      for (Map.Entry<String, Object> metric : group.getValue().entrySet()) {
        Object v = metric.getValue();
        g.put(metric.getKey(), v == null ? "null" : v.getClass().getName());
      }
    }
    out.set("javaTypes", types);
    return out;
  }

  private static MetricsSnapshot metricsSnapshot(JsonNode r) {
    JsonNode h = r.get("header");
    MetricsHeader header = new MetricsHeader(h.get("job-name").asText(), h.get("job-id").asText(),
        h.get("container-name").asText(), h.get("exec-env-container-id").asText(),
        h.hasNonNull("samza-epoch-id") ? Optional.of(h.get("samza-epoch-id").asText()) : Optional.empty(),
        h.get("source").asText(), h.get("version").asText(), h.get("samza-version").asText(),
        h.get("host").asText(), h.get("time").asLong(), h.get("reset-time").asLong());
    // as MetricsSnapshotReporter fills it: a counter's count is a long, a timer's mean a double
    Map<String, Map<String, Object>> groups = new HashMap<>();
    Iterator<Map.Entry<String, JsonNode>> it = r.get("metrics").fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> group = it.next();
      Map<String, Object> values = new HashMap<>();
      group.getValue().fields().forEachRemaining(m -> values.put(m.getKey(), javaValue(m.getValue())));
      groups.put(group.getKey(), values);
    }
    return new MetricsSnapshot(header, new Metrics(groups));
  }

  private static Object javaValue(JsonNode node) {
    if (node.isIntegralNumber()) {
      return node.asLong();
    }
    if (node.isNumber()) {
      return node.asDouble();
    }
    if (node.isArray()) {
      List<Object> list = new ArrayList<>();
      node.forEach(n -> list.add(javaValue(n)));
      return list;
    }
    if (node.isNull()) {
      return null;
    }
    if (node.isBoolean()) {
      return node.asBoolean();
    }
    return node.asText();
  }

  // -- checkpoints: KafkaCheckpointLogKeySerde, CheckpointV1Serde, CheckpointV2Serde ------------------

  private static ArrayNode offsetsJson(Map<SystemStreamPartition, String> offsets) {
    ArrayNode out = JSON.createArrayNode();
    offsets.forEach((ssp, offset) -> out.addObject().put("system", ssp.getSystem()).put("stream", ssp.getStream())
        .put("partition", ssp.getPartition().getPartitionId()).put("offset", offset));
    return out;
  }

  private static Map<SystemStreamPartition, String> offsets(JsonNode entries) {
    Map<SystemStreamPartition, String> out = new HashMap<>();
    entries.forEach(e -> out.put(ssp(e), e.hasNonNull("offset") ? e.get("offset").asText() : null));
    return out;
  }

  private static SystemStreamPartition ssp(JsonNode e) {
    return new SystemStreamPartition(e.get("system").asText(), e.get("stream").asText(),
        new Partition(e.get("partition").asInt()));
  }

  private static ObjectNode checkpointV2Decode(CheckpointV2 checkpoint) {
    ObjectNode out = JSON.createObjectNode();
    out.put("checkpointId", checkpoint.getCheckpointId().serialize());
    out.set("offsets", offsetsJson(checkpoint.getOffsets()));
    out.set("stateCheckpointMarkers", JSON.valueToTree(checkpoint.getStateCheckpointMarkers()));
    // the Kafka changelog markers as Samza's state backend reads them
    ObjectNode kafka = out.putObject("kafkaMarkers");
    Map<String, String> markers = checkpoint.getStateCheckpointMarkers()
        .getOrDefault(KafkaStateCheckpointMarker.KAFKA_STATE_BACKEND_FACTORY_NAME, Map.of());
    markers.forEach((store, marker) -> {
      KafkaStateCheckpointMarker m = KafkaStateCheckpointMarker.deserialize(marker);
      SystemStreamPartition changelog = m.getChangelogSSP();
      kafka.putObject(store).put("system", changelog.getSystem()).put("stream", changelog.getStream())
          .put("partition", changelog.getPartition().getPartitionId()).put("offset", m.getChangelogOffset());
    });
    return out;
  }

  private static CheckpointV2 checkpointV2(JsonNode r) {
    Map<String, Map<String, String>> markers = new HashMap<>();
    if (r.has("kafkaMarkers")) {
      Map<String, String> kafka = new HashMap<>();
      r.get("kafkaMarkers").fields().forEachRemaining(e -> kafka.put(e.getKey(), KafkaStateCheckpointMarker.serialize(
          new KafkaStateCheckpointMarker(ssp(e.getValue()),
              e.getValue().hasNonNull("offset") ? e.getValue().get("offset").asText() : null))));
      markers.put(KafkaStateCheckpointMarker.KAFKA_STATE_BACKEND_FACTORY_NAME, kafka);
    }
    if (r.has("otherMarkers")) {
      r.get("otherMarkers").fields().forEachRemaining(factory -> {
        Map<String, String> values = new HashMap<>();
        factory.getValue().fields().forEachRemaining(v -> values.put(v.getKey(), v.getValue().asText()));
        markers.put(factory.getKey(), values);
      });
    }
    return new CheckpointV2(CheckpointId.deserialize(r.get("checkpointId").asText()), offsets(r.get("offsets")),
        markers);
  }

  // -- startpoints: StartpointManager over the coordinator stream's metadata store ---------------------

  /**
   * A MetadataStore holding coordinator stream messages, converting keys and values exactly as
   * CoordinatorStreamStore does (its static key helpers, CoordinatorStreamKeySerde; values as they
   * are), without a Samza system underneath: it is built from the messages the engine wrote and
   * records the messages Samza's classes write.
   */
  static final class MessageStore implements org.apache.samza.metadatastore.MetadataStore {
    final Map<String, byte[]> messages = new java.util.LinkedHashMap<>();
    final List<byte[][]> written = new ArrayList<>();

    MessageStore(JsonNode engineMessages) {
      // as CoordinatorStreamStore.readMessagesFromCoordinatorStream
      engineMessages.forEach(m -> {
        Object[] keyArray = new JsonSerde<List<?>>().fromBytes(bytes(m, "key")).toArray();
        CoordinatorStreamMessage message = new CoordinatorStreamMessage(keyArray, new HashMap<>());
        String namespacedKey = org.apache.samza.coordinator.metadatastore.CoordinatorStreamStore
            .serializeCoordinatorMessageKeyToJson(message.getType(), message.getKey());
        if (m.hasNonNull("value")) {
          messages.put(namespacedKey, bytes(m, "value"));
        } else {
          messages.remove(namespacedKey);
        }
      });
    }

    @Override public void init() { }
    @Override public byte[] get(String key) { return messages.get(key); }
    @Override public Map<String, byte[]> all() { return java.util.Collections.unmodifiableMap(new HashMap<>(messages)); }
    @Override public void delete(String key) { put(key, null); }
    @Override public void flush() { }
    @Override public void close() { }

    @Override
    public void put(String namespacedKey, byte[] value) {
      // as CoordinatorStreamStore.put: the namespace becomes the key's type, the value is sent as it is
      org.apache.samza.coordinator.metadatastore.CoordinatorStreamStore.CoordinatorMessageKey key =
          org.apache.samza.coordinator.metadatastore.CoordinatorStreamStore.deserializeCoordinatorMessageKeyFromJson(namespacedKey);
      written.add(new byte[][]{new CoordinatorStreamKeySerde(key.getNamespace()).toBytes(key.getKey()), value});
      if (value == null) {
        messages.remove(namespacedKey);
      } else {
        messages.put(namespacedKey, value);
      }
    }
  }

  /** Samza's StartpointObjectMapper (package-private; the same mapper StartpointManager uses). */
  private static ObjectMapper startpointMapper() throws Exception {
    java.lang.reflect.Method m = Class.forName("org.apache.samza.startpoint.StartpointObjectMapper")
        .getDeclaredMethod("getObjectMapper");
    m.setAccessible(true);
    return (ObjectMapper) m.invoke(null);
  }

  private static ObjectNode startpointStore(JsonNode r) throws Exception {
    MessageStore store = new MessageStore(r.get("messages"));
    ObjectMapper mapper = startpointMapper();
    org.apache.samza.startpoint.StartpointManager manager = new org.apache.samza.startpoint.StartpointManager(store);
    manager.start();
    ArrayNode results = JSON.createArrayNode();
    for (JsonNode a : r.get("actions")) {
      String action = a.get("do").asText();
      TaskName task = a.hasNonNull("taskName") ? new TaskName(a.get("taskName").asText()) : null;
      switch (action) {
        case "write":
          manager.writeStartpoint(ssp(a.get("ssp")), task,
              mapper.readValue(JSON.writeValueAsBytes(a.get("startpoint")), org.apache.samza.startpoint.Startpoint.class));
          results.addNull();
          break;
        case "read": {
          Optional<org.apache.samza.startpoint.Startpoint> sp = task == null ? manager.readStartpoint(ssp(a.get("ssp")))
              : manager.readStartpoint(ssp(a.get("ssp")), task);
          results.add(sp.isPresent() ? startpointJson(sp.get()) : JSON.nullNode());
          break;
        }
        case "delete":
          manager.deleteStartpoint(ssp(a.get("ssp")), task);
          results.addNull();
          break;
        case "fanOut": {
          Map<TaskName, java.util.Set<SystemStreamPartition>> tasks = new HashMap<>();
          a.get("tasks").fields().forEachRemaining(t -> {
            java.util.Set<SystemStreamPartition> ssps = new java.util.HashSet<>();
            t.getValue().forEach(e -> ssps.add(ssp(e)));
            tasks.put(new TaskName(t.getKey()), ssps);
          });
          ObjectNode out = JSON.createObjectNode();
          manager.fanOut(tasks).forEach((t, fanOut) -> out.set(t.getTaskName(), fanOutJson(fanOut)));
          results.add(out);
          break;
        }
        case "getFanOut":
          results.add(fanOutJson(manager.getFanOutForTask(task)));
          break;
        case "removeFanOut": {
          java.util.Set<SystemStreamPartition> ssps = new java.util.HashSet<>();
          a.get("ssps").forEach(e -> ssps.add(ssp(e)));
          manager.removeFanOutForTaskSSPs(task, ssps);
          results.addNull();
          break;
        }
        default:
          throw new IllegalArgumentException("unknown startpoint action " + action);
      }
    }
    manager.stop();
    ObjectNode out = JSON.createObjectNode();
    out.set("results", results);
    ArrayNode written = out.putArray("written");
    for (byte[][] m : store.written) {
      ObjectNode w = written.addObject().put("key", Base64.getEncoder().encodeToString(m[0]));
      if (m[1] == null) {
        w.putNull("value");
      } else {
        w.put("value", Base64.getEncoder().encodeToString(m[1]));
      }
    }
    return out;
  }

  /** A startpoint as Samza's classes hold it: its class and getters. */
  private static ObjectNode startpointJson(org.apache.samza.startpoint.Startpoint sp) {
    ObjectNode out = JSON.createObjectNode();
    out.put("class", sp.getClass().getSimpleName());
    out.put("creationTimestamp", sp.getCreationTimestamp());
    if (sp instanceof org.apache.samza.startpoint.StartpointSpecific) {
      out.put("specificOffset", ((org.apache.samza.startpoint.StartpointSpecific) sp).getSpecificOffset());
    }
    if (sp instanceof org.apache.samza.startpoint.StartpointTimestamp) {
      out.put("timestampOffset", ((org.apache.samza.startpoint.StartpointTimestamp) sp).getTimestampOffset());
    }
    return out;
  }

  private static ObjectNode fanOutJson(Map<SystemStreamPartition, org.apache.samza.startpoint.Startpoint> fanOut) {
    ObjectNode out = JSON.createObjectNode();
    fanOut.forEach((ssp, sp) -> out.set(ssp.getSystem() + "." + ssp.getStream() + "." + ssp.getPartition().getPartitionId(),
        startpointJson(sp)));
    return out;
  }

  // -- helpers ---------------------------------------------------------------------------------------

  private static byte[] bytes(JsonNode r, String field) {
    return Base64.getDecoder().decode(r.get(field).asText());
  }

  private static ObjectNode withBytes(byte[] data) {
    return JSON.createObjectNode().put("bytes", Base64.getEncoder().encodeToString(data));
  }
}
