// Types of replace-file.mjs, for its test (src/replace-file.test.ts).
export declare function replaceFile(src: string, dest: string): void;
