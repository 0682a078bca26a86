import { fileURLToPath } from "node:url";
import { BACKEND_API_VERSION } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { SchedulerError } from "./errors.js";
import { Registry } from "./registry.js";

const fixture = (name: string) => fileURLToPath(new URL(`./test-fixtures/${name}.ts`, import.meta.url));

describe("Registry", async () => {
  const registry = await Registry.discover({
    known: ["@minfer/backend-nope"],
    packages: [
      fixture("backend-good"),
      fixture("backend-old"),
      fixture("backend-zero"),
      fixture("backend-throws"),
    ],
    reference: true,
  });
  const diag = (pkg: string) => registry.diagnostics().get(pkg)!;

  it("keeps entries that load with the right API version, sorted by score", () => {
    expect(registry.backends().map((b) => b.name)).toEqual(["good", "reference"]);
    expect(registry.devices().map((d) => d.name)).toEqual(["good", "reference"]);
  });

  it("records why each other package was skipped", () => {
    expect(diag("@minfer/backend-nope").status).toBe("not-installed");
    expect(diag(fixture("backend-throws")).status).toBe("failed");
    expect(diag(fixture("backend-throws")).reason).toContain("libcudart.so.12");
    expect(diag(fixture("backend-zero")).status).toBe("unusable");
    expect(diag(fixture("backend-zero")).reason).toContain("native binary missing");
  });

  it("refuses a wrong API version with both numbers", () => {
    const d = diag(fixture("backend-old"));
    expect(d.status).toBe("wrong-api-version");
    expect(d.reason).toContain("99");
    expect(d.reason).toContain(String(BACKEND_API_VERSION));
  });

  it("gives one error naming a missing backend and what to do", () => {
    const err = (name: string) => {
      try {
        registry.device(name);
      } catch (e) {
        return e as SchedulerError;
      }
      throw new Error("expected an error");
    };
    expect(err("nope")).toBeInstanceOf(SchedulerError);
    expect(err("nope").code).toBe("BACKEND_MISSING");
    expect(err("nope").message).toMatch(
      /"nope" is not available: @minfer\/backend-nope is not installed; install it/,
    );
    expect(err("zero").message).toContain("native binary missing");
    expect(err("old").message).toMatch(/API 99.*speaks 1/);
    expect(err("cuda").message).toMatch(/no package providing it was tried.*RegistryOptions.packages/);
    expect(() => registry.require("zero")).toThrow(/score 0/);
    expect(registry.device("good").name).toBe("good");
  });

  it("without reference: true, nothing falls back to the reference device", async () => {
    const r = await Registry.discover({ known: [] });
    expect(r.devices()).toEqual([]);
  });
});
