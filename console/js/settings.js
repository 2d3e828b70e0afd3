// What the gateway tells the console at start (settings.json): the configured tiers.
export const settings = { tiers: ['free', 'standard', 'enterprise'] };

export async function loadSettings() {
  try {
    const res = await fetch('settings.json', { cache: 'no-store', credentials: 'omit' });
    if (res.ok) Object.assign(settings, await res.json());
  } catch {
    // Keep the defaults: the tier pickers still work, the API names a tier it does not know.
  }
}
