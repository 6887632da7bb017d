// The settings a view reads text with come from the site's manifest only (each entry's task,
// written by lab.web.export from lab.inspect.explore's settings for that model): the page keeps no
// default of its own, so a setting the manifest lacks is an error that says which, never a number.

/**
 * The `keys` of a manifest block (an entry's task, or its trace), each required: a missing (or
 * null) one throws an error naming the model and the setting. model: the entry's name.
 */
export function taskSettings(block, keys, model, where = "task") {
  const missing = keys.filter((k) => block?.[k] === undefined || block?.[k] === null);
  if (missing.length) {
    const named = missing.map((k) => `${where}.${k}`).join(", ");
    throw new Error(
      `the manifest entry of ${model ? `"${model}"` : "this model"} has no ${named}: ` +
        "the page reads every setting from the manifest, so export the site again with python -m lab export-web",
    );
  }
  return Object.fromEntries(keys.map((k) => [k, block[k]]));
}
