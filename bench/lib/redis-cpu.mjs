/** CPU seconds the Redis server has used so far (INFO cpu: used_cpu_user + used_cpu_sys). */
export async function redisCpuSeconds(client) {
  const info = await client.info('cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
  return user + sys;
}
