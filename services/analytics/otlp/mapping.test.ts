// The mapping's bound on the attributes that name a series: a data point whose attributes and its
// resource's exceed MAX_SERIES_ATTRIBUTES is rejected with the reason, so that a hostile export
// (one resource of 10^5 attributes beside thousands of points) costs time linear in its size
// rather than their product; one at the bound is mapped.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ExportMetricsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { AggregationTemporality } from "../../../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";
import { MAX_SERIES_ATTRIBUTES, mapMetrics } from "./mapping.js";

const attr = (key: string, value: string) => ({ key, value: { value: { case: "stringValue" as const, value } } });

/** Delta token-usage points (2 attributes each) under one resource of `resourceAttributes` attributes. */
function tokenPoints(resourceAttributes: number, points: number) {
  return create(ExportMetricsServiceRequestSchema, {
    resourceMetrics: [
      {
        resource: {
          attributes: [
            attr("user.email", "a@example.com"),
            ...Array.from({ length: resourceAttributes - 1 }, (_, i) => attr(`extra.${i}`, "x")),
          ],
        },
        scopeMetrics: [
          {
            metrics: [
              {
                name: "claude_code.token.usage",
                data: {
                  case: "sum",
                  value: {
                    aggregationTemporality: AggregationTemporality.DELTA,
                    dataPoints: Array.from({ length: points }, (_, i) => ({
                      attributes: [attr("type", "input"), attr("model", "claude-sonnet-4-5")],
                      timeUnixNano: 1_764_000_000_000_000_000n + BigInt(i) * 1000n,
                      value: { case: "asInt" as const, value: 100n },
                    })),
                  },
                },
              },
            ],
          },
        ],
      },
    ],
  });
}

describe("the attributes that name a series", () => {
  it("map a point whose attributes and its resource's are at the bound", async () => {
    const mapped = await mapMetrics(tokenPoints(MAX_SERIES_ATTRIBUTES - 2, 3), "org-1");
    expect(mapped.entryReasons).toEqual([null, null, null]);
    expect(mapped.events.map((e) => e.inputTokens)).toEqual([100, 100, 100]);
  });

  it("reject a point over it, with the reason", async () => {
    const mapped = await mapMetrics(tokenPoints(MAX_SERIES_ATTRIBUTES - 1, 2), "org-1");
    expect(mapped.events).toEqual([]);
    expect(mapped.entryReasons).toEqual([
      `attributes: a data point and its resource carry ${MAX_SERIES_ATTRIBUTES + 1}, at most ${MAX_SERIES_ATTRIBUTES} name a series`,
      `attributes: a data point and its resource carry ${MAX_SERIES_ATTRIBUTES + 1}, at most ${MAX_SERIES_ATTRIBUTES} name a series`,
    ]);
  });

  // Naming each point's series from 10^5 resource attributes took 9.5 s per 1,000 points.
  it("reject 10^4 points under a resource of 10^5 attributes in time linear in the export", async () => {
    const mapped = await mapMetrics(tokenPoints(100_000, 10_000), "org-1");
    expect(mapped.entryReasons).toHaveLength(10_000);
    expect(
      mapped.entryReasons.every((r) => r?.startsWith("attributes: a data point and its resource carry 100002")),
    ).toBe(true);
    expect(mapped.events).toEqual([]);
  });
});
