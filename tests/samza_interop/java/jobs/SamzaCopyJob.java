/*
 * A Java Samza job for the interop tests, run by Samza's own runner: LocalApplicationRunner with the
 * passthrough job coordinator, on Samza's Kafka system, checkpointing with Samza's
 * KafkaCheckpointManager. Its task copies each message of its input to an output stream and, on a
 * message equal to app.stop.value, commits and stops (the message itself is not copied): how a
 * test stops the job at a known offset with its checkpoint written. Samza's commit is
 * asynchronous: a commit requested while another is in progress (the one a container writes at
 * start) is skipped, and a shutdown requested with it can end the container before the checkpoint
 * is written. So the task asks for a commit at the stop message and at every window() after it,
 * and for the shutdown app.stop.delay.ms after the last of its app.stop.tasks tasks (default 1)
 * met its stop message; a message arriving after a task's stop message fails the job (the test
 * produces none).
 *
 * CountPipeline, the second application (app.class=SamzaCopyJob$CountPipeline), is the Java twin of
 * the engine's tests.hl_apps.apps:TwoStageCountApp up to its intermediate stream: words from Samza's
 * in-memory system, partitionBy(word → 1, JSON key and value, op id "by-word") into the
 * intermediate stream <job.name>-<job.id>-partition_by-by-word on the default system (Kafka); its
 * own downstream stage only consumes it. main() seeds the in-memory words first (app.seed.words,
 * comma-separated, word i into partition i % app.seed.partitions, then app.seed.watermark as a
 * source's watermark if set, then an end-of-stream on every partition), so the job ends by itself once its intermediate stream has ended: Samza writes the
 * stream's user messages, end-of-stream (and any watermark) messages as Samza 1.8 does.
 *
 * Usage: java -cp <classes>:<Samza's classpath> SamzaCopyJob <job.properties> <timeout seconds>
 * Exit status 0 when the job finished successfully within the timeout, 1 otherwise.
 *
 * Compiled by the tests' fixture (tests/samza_interop/samza_job.py); never committed as a binary.
 */

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.samza.application.ApplicationUtil;
import org.apache.samza.application.StreamApplication;
import org.apache.samza.application.descriptors.StreamApplicationDescriptor;
import org.apache.samza.config.Config;
import org.apache.samza.config.MapConfig;
import org.apache.samza.context.Context;
import org.apache.samza.coordinator.metadatastore.CoordinatorStreamMetadataStoreFactory;
import org.apache.samza.job.ApplicationStatus;
import org.apache.samza.metrics.MetricsRegistryMap;
import org.apache.samza.operators.KV;
import org.apache.samza.operators.MessageStream;
import org.apache.samza.operators.OutputStream;
import org.apache.samza.runtime.LocalApplicationRunner;
import org.apache.samza.serializers.JsonSerdeV2;
import org.apache.samza.serializers.KVSerde;
import org.apache.samza.serializers.NoOpSerde;
import org.apache.samza.serializers.StringSerde;
import org.apache.samza.storage.kv.KeyValueStore;
import org.apache.samza.system.EndOfStreamMessage;
import org.apache.samza.system.IncomingMessageEnvelope;
import org.apache.samza.system.OutgoingMessageEnvelope;
import org.apache.samza.system.StreamSpec;
import org.apache.samza.system.SystemProducer;
import org.apache.samza.system.SystemStream;
import org.apache.samza.system.WatermarkMessage;
import org.apache.samza.system.descriptors.GenericSystemDescriptor;
import org.apache.samza.system.inmemory.InMemorySystemFactory;
import org.apache.samza.system.kafka.KafkaSystemFactory;
import org.apache.samza.task.InitableTask;
import org.apache.samza.task.MessageCollector;
import org.apache.samza.task.StreamTask;
import org.apache.samza.task.TaskCoordinator;
import org.apache.samza.task.WindowableTask;

public class SamzaCopyJob {

  /**
   * Copies each message to app.output.system.app.output.stream; stops at app.stop.value. With
   * app.count.store, counts each message (a word) in that key-value store (String keys and counts)
   * and sends "word:count" instead: a stateful task whose store a changelog restores.
   */
  public static class CopyTask implements StreamTask, InitableTask, WindowableTask {
    /** the container's tasks that met their stop message, and when the last one did */
    private static final AtomicInteger STOPPED = new AtomicInteger();
    private static final AtomicLong LAST_STOP = new AtomicLong();

    private SystemStream output;
    private String stopValue;
    private long stopDelayMs;
    private int stopTasks;
    private long stoppedAt = -1;
    private KeyValueStore<String, String> counts;

    @Override
    public void init(Context context) {
      Config config = context.getJobContext().getConfig();
      output = new SystemStream(config.get("app.output.system"), config.get("app.output.stream"));
      stopValue = config.get("app.stop.value");
      stopDelayMs = config.getLong("app.stop.delay.ms", 2000);
      stopTasks = config.getInt("app.stop.tasks", 1);
      String store = config.get("app.count.store");
      if (store != null) {
        @SuppressWarnings("unchecked")
        KeyValueStore<String, String> kv = (KeyValueStore<String, String>) context.getTaskContext().getStore(store);
        counts = kv;
      }
    }

    @Override
    public void process(IncomingMessageEnvelope envelope, MessageCollector collector, TaskCoordinator coordinator) {
      Object message = envelope.getMessage();
      if (stoppedAt >= 0) {
        throw new IllegalStateException("SamzaCopyJob: " + envelope.getSystemStreamPartition() + " offset "
            + envelope.getOffset() + " arrived after the stop message");
      }
      if (stopValue != null && stopValue.equals(message)) {
        System.err.println("SamzaCopyJob: " + envelope.getSystemStreamPartition() + " offset " + envelope.getOffset()
            + " is the stop message: committing and stopping");
        stoppedAt = System.currentTimeMillis();
        LAST_STOP.set(stoppedAt);
        STOPPED.incrementAndGet();
        coordinator.commit(TaskCoordinator.RequestScope.CURRENT_TASK);
        return;
      }
      if (counts != null) {
        String word = (String) message;
        String before = counts.get(word);
        String count = String.valueOf(before == null ? 1 : Integer.parseInt(before) + 1);
        counts.put(word, count);
        message = word + ":" + count;
      }
      collector.send(new OutgoingMessageEnvelope(output, envelope.getKey(), message));
    }

    @Override
    public void window(MessageCollector collector, TaskCoordinator coordinator) {
      if (stoppedAt < 0) {
        return;
      }
      if (STOPPED.get() >= stopTasks && System.currentTimeMillis() - LAST_STOP.get() >= stopDelayMs) {
        coordinator.shutdown(TaskCoordinator.RequestScope.ALL_TASKS_IN_CONTAINER);
      } else {
        coordinator.commit(TaskCoordinator.RequestScope.CURRENT_TASK);
      }
    }
  }

  /** The Java twin of TwoStageCountApp's first stage (see the file comment). */
  public static class CountPipeline implements StreamApplication {
    @Override
    public void describe(StreamApplicationDescriptor app) {
      GenericSystemDescriptor mem = new GenericSystemDescriptor("mem", InMemorySystemFactory.class.getName());
      MessageStream<String> words = app.getInputStream(mem.getInputDescriptor("words", new NoOpSerde<String>()));
      words.partitionBy(w -> w, w -> 1, KVSerde.of(new JsonSerdeV2<>(String.class), new JsonSerdeV2<>(Integer.class)),
          "by-word")
          .sink((kv, collector, coordinator) -> { });
    }
  }

  /**
   * CountPipeline's graph with a downstream of its own: each message of the intermediate stream's
   * key (the word) to app.output.stream on Kafka. Run with app.seed.words empty, its in-memory
   * words only end: every message of the intermediate stream comes from another job (the engine's
   * first stage of TwoStageCountApp), and so must the end-of-stream messages that end it.
   */
  public static class WordsPipeline implements StreamApplication {
    @Override
    public void describe(StreamApplicationDescriptor app) {
      GenericSystemDescriptor mem = new GenericSystemDescriptor("mem", InMemorySystemFactory.class.getName());
      GenericSystemDescriptor kafka = new GenericSystemDescriptor("kafka", KafkaSystemFactory.class.getName());
      MessageStream<String> words = app.getInputStream(mem.getInputDescriptor("words", new NoOpSerde<String>()));
      OutputStream<String> out =
          app.getOutputStream(kafka.getOutputDescriptor(app.getConfig().get("app.output.stream"), new StringSerde()));
      words.partitionBy(w -> w, w -> 1, KVSerde.of(new JsonSerdeV2<>(String.class), new JsonSerdeV2<>(Integer.class)),
          "by-word")
          .map(KV::getKey)
          .sendTo(out);
    }
  }

  /** The in-memory words CountPipeline reads, each partition ended (a null-task end-of-stream). */
  private static void seed(Config config) {
    String words = config.get("app.seed.words");
    if (words == null) {
      return;
    }
    int partitions = config.getInt("app.seed.partitions");
    InMemorySystemFactory factory = new InMemorySystemFactory();
    factory.getAdmin("mem", config).createStream(new StreamSpec("words", "words", "mem", partitions));
    SystemProducer producer = factory.getProducer("mem", config, new MetricsRegistryMap());
    SystemStream stream = new SystemStream("mem", "words");
    String[] list = words.isEmpty() ? new String[0] : words.split(",");
    for (int i = 0; i < list.length; i++) {
      // the partition key is the partition: InMemorySystemProducer hashes it (an Integer's hash is itself)
      producer.send("seed", new OutgoingMessageEnvelope(stream, i % partitions, null, list[i]));
    }
    String watermark = config.get("app.seed.watermark");
    for (int p = 0; p < partitions; p++) {
      if (watermark != null) {
        // a source's watermark (no task name), which Samza's operators pass on through partitionBy
        producer.send("seed", new OutgoingMessageEnvelope(stream, p, null,
            new WatermarkMessage(Long.parseLong(watermark), null)));
      }
      producer.send("seed", new OutgoingMessageEnvelope(stream, p, null, new EndOfStreamMessage(null)));
    }
  }

  public static void main(String[] args) throws Exception {
    Properties properties = new Properties();
    try (InputStream in = new FileInputStream(args[0])) {
      properties.load(in);
    }
    Map<String, String> map = new HashMap<>();
    properties.stringPropertyNames().forEach(name -> map.put(name, properties.getProperty(name)));
    Config config = new MapConfig(map);
    seed(config);
    // app.metadata.store=coordinator-stream: the job's metadata store (startpoints) on its
    // coordinator stream, which LocalApplicationRunner only creates by itself for the ZooKeeper
    // job coordinator
    LocalApplicationRunner runner = "coordinator-stream".equals(config.get("app.metadata.store"))
        ? new LocalApplicationRunner(ApplicationUtil.fromConfig(config), config,
            new CoordinatorStreamMetadataStoreFactory())
        : new LocalApplicationRunner(ApplicationUtil.fromConfig(config), config);
    runner.run(null);
    boolean finished = runner.waitForFinish(Duration.ofSeconds(Long.parseLong(args[1])));
    ApplicationStatus status = runner.status();
    System.err.println("SamzaCopyJob: finished=" + finished + " status=" + status);
    if (!finished) {
      runner.kill();
    }
    System.exit(finished && status.getStatusCode() == ApplicationStatus.StatusCode.SuccessfulFinish ? 0 : 1);
  }
}
